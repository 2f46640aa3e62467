"""The embedded default store: one SQLite file. `SqliteStore` coordinates; the SQL lives beside it
(`sqlite_schema.py`, `sqlite_rows.py`, `sqlite_documents.py`, `sqlite_writes.py`, `sqlite_search.py`,
`sqlite_originals.py`; docs/architecture.md has the map).

WAL journal: readers never block the writer or each other. All writes go through one writer thread,
one transaction per document, so a document's chunks appear (or vanish) all at once and a crash
mid-ingest leaves nothing behind. Unfiltered searches run on the indexes beside the file
(`search_indexes.py`), caught up in the background after writes; searches with filters run on SQLite
alone. One process per store file (`process_lock.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import (
    DEFAULT_COLLECTION,
    Chunk,
    Collection,
    ComponentHealth,
    DocumentRecord,
    EmbeddingIdentity,
    MetadataValue,
    Original,
    OriginalFile,
    ScoredChunk,
    SearchFilters,
    StoredChunk,
)
from carrag.services.stores.base import (
    ChunkListing,
    DocumentPage,
    DocumentSort,
    SortOrder,
    VectorHits,
    checked_vectors,
)
from carrag.services.stores.fts_query import fts_match_expression
from carrag.services.stores.process_lock import ProcessLock
from carrag.services.stores.search_indexes import SearchIndexes
from carrag.services.stores.sqlite_documents import (
    all_collections,
    chunk_listing,
    delete_collection,
    document_page,
    found_documents,
    insert_collection,
    rename_collection,
    sources,
)
from carrag.services.stores.sqlite_index_catch_up import IndexCatchUp
from carrag.services.stores.sqlite_originals import ORIGINAL_PIECE_BYTES, put_original, read_original
from carrag.services.stores.sqlite_rows import row_to_document, stored_identity
from carrag.services.stores.sqlite_schema import SCHEMA, create_schema, integrity_problems
from carrag.services.stores.sqlite_search import BM25_WEIGHTS, lexical_leg, vector_leg, windows_read
from carrag.services.stores.sqlite_writes import insert_document, update_document_metadata, wipe_store

# names other modules, scripts and tests import from here
__all__ = ["BM25_WEIGHTS", "ORIGINAL_PIECE_BYTES", "SCHEMA", "SqliteStore", "integrity_problems"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _read_retrying(function: Callable[[sqlite3.Connection], T], connection: sqlite3.Connection) -> T:
    """``function(connection)``, once more if FTS5 could not open ``chunks_fts`` ("vtable constructor
    failed", which a read meeting another connection's schema change gets). Every table is created on
    open, so this is a safety net; a read changes nothing, so running it again is safe."""
    try:
        return function(connection)
    except sqlite3.OperationalError as exc:
        if "vtable constructor failed" not in str(exc):
            raise
        return function(connection)


class SqliteStore:
    backend = "sqlite"

    def __init__(self, path: Path, *, reader_threads: int = 4) -> None:
        self.path = Path(path)
        self._reader_threads = reader_threads
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._readers = ThreadPoolExecutor(max_workers=reader_threads, thread_name_prefix="sqlite-reader")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._process_lock = ProcessLock(self.path)
        self._closed = False
        self.indexes = SearchIndexes(self.path.with_name(self.path.name + ".indexes"))
        self._index_catch_up = IndexCatchUp(self.indexes, self._connection, lambda work: self._writer.submit(work))
        # the registered collections' ids, kept by the (single) writer: a search over all of them
        # needs no collection filter, so it keeps the fast unfiltered path (tantivy, HNSW)
        self._collection_ids: frozenset[str] = frozenset({DEFAULT_COLLECTION})
        # the recorded model as last read, with the number of writes committed before that read
        self._writes = 0
        self._identity: tuple[int, EmbeddingIdentity | None] | None = None

    # --- plumbing ------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA busy_timeout = 60000")
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA synchronous = NORMAL")
            self._local.connection = connection
            with self._connections_lock:
                self._connections.append(connection)
        return connection

    async def _read(self, function: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._readers, lambda: _read_retrying(function, self._connection()))
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"SQLite read failed: {exc}") from exc

    async def _write(self, function: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``function`` in one IMMEDIATE transaction on the single writer thread."""

        def run() -> T:
            connection = self._connection()
            connection.execute("BEGIN IMMEDIATE")
            try:
                start = self.indexes.log_head(connection)
                result = function(connection)
                written = self.indexes.read_write(connection, start)  # the searches' catch-up, done here
                connection.execute("COMMIT")
            except BaseException:
                self.indexes.discard_write()
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            try:
                if written is not None:
                    self.indexes.take_in(written)
            except Exception:  # committed all the same: the next search catches the indexes up from the log
                logger.warning("taking a write into the search indexes failed", exc_info=True)
            self._writes += 1
            self._index_catch_up.schedule()  # the indexes catch up once writes pause
            return result

        loop = asyncio.get_running_loop()
        try:
            # Shielded: once a write has started, it finishes (or rolls back) even if the request
            # that asked for it is cancelled, so cancellation never leaves a transaction open.
            return await asyncio.shield(loop.run_in_executor(self._writer, run))
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"SQLite write failed: {exc}") from exc

    # --- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        self._identity = None  # another process may have changed the file while it was closed
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DependencyUnavailable("store", f"cannot create {self.path.parent}: {exc}") from exc

        if self._closed:  # reopened after close
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
            self._readers = ThreadPoolExecutor(max_workers=self._reader_threads, thread_name_prefix="sqlite-reader")
            self._local = threading.local()
            self._index_catch_up.restart()
            self._closed = False
        self._process_lock.acquire()

        def create(connection: sqlite3.Connection) -> None:
            self._collection_ids = create_schema(connection)

        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._writer, lambda: create(self._connection()))
            await self._read(self.indexes.sync)  # open the indexes beside the file (rebuilt if stale)
            self._index_catch_up.prune_change_log()
        except sqlite3.DatabaseError as exc:
            self._process_lock.release()
            raise DependencyUnavailable("store", f"cannot open SQLite database {self.path}: {exc}") from exc
        except BaseException:
            self._process_lock.release()
            raise

    async def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._closed = True
        self._index_catch_up.stop()
        self.indexes.close()
        with self._connections_lock:
            for connection in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            self._connections.clear()
        self._process_lock.release()

    async def sync_indexes(self) -> None:
        """Bring the search indexes up to the last committed write now (the next search would)."""
        await self._read(self.indexes.sync)
        self._index_catch_up.prune_change_log()

    async def health(self) -> ComponentHealth:
        try:
            count = await self.count_chunks()
        except DependencyUnavailable as exc:
            return ComponentHealth("store", "unavailable", "sqlite", None, exc.message)
        return ComponentHealth("store", "ok", "sqlite", None, f"{self.path} ({count} chunks)")

    # --- embedding identity --------------------------------------------------------------------
    async def embedding_identity(self) -> EmbeddingIdentity | None:
        return await self._read(stored_identity)

    async def query_identity(self) -> EmbeddingIdentity | None:
        """`embedding_identity` from memory until the next write: one process holds the file
        (`process_lock.py`), so the recorded model changes only by a write of this store."""
        writes = self._writes
        if self._identity is None or self._identity[0] != writes:
            self._identity = (writes, await self.embedding_identity())
        return self._identity[1]

    # --- writes --------------------------------------------------------------------------------
    async def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbeddingIdentity,
        *,
        original: OriginalFile | None = None,
    ) -> str | None:
        matrix = checked_vectors(chunks, vectors, identity)

        def write(connection: sqlite3.Connection) -> str | None:
            replaced = insert_document(connection, document, chunks, matrix, identity)
            if original is not None:
                put_original(connection, document.document_id, original)
            return replaced

        return await self._write(write)

    async def write_documents(
        self, documents: Sequence[tuple[DocumentRecord, Sequence[Chunk], np.ndarray]], identity: EmbeddingIdentity
    ) -> list[str | None]:
        """Many `write_document` calls in one transaction (bulk loads: the bench grows its stores
        with it). All or nothing; each document replaces its ``source_id`` as one write would."""
        checked = [
            (document, chunks, checked_vectors(chunks, vectors, identity)) for document, chunks, vectors in documents
        ]

        def write(connection: sqlite3.Connection) -> list[str | None]:
            return [insert_document(connection, d, chunks, matrix, identity) for d, chunks, matrix in checked]

        return await self._write(write)

    async def delete_document(self, document_id: str) -> bool:
        def delete(connection: sqlite3.Connection) -> bool:
            return bool(connection.execute("DELETE FROM documents WHERE document_id = ?", (document_id,)).rowcount)

        return await self._write(delete)

    async def update_metadata(
        self,
        document_id: str,
        *,
        tags: list[str] | None = None,
        title: str | None = None,
        user_metadata: dict[str, MetadataValue] | None = None,
    ) -> DocumentRecord | None:
        return await self._write(
            lambda c: update_document_metadata(c, document_id, tags=tags, title=title, user_metadata=user_metadata)
        )

    async def wipe(self) -> None:
        await self._write(wipe_store)

    # --- originals -----------------------------------------------------------------------------
    async def put_original(self, document_id: str, content: bytes, content_type: str, filename: str) -> bool:
        def put(connection: sqlite3.Connection) -> bool:
            if connection.execute("SELECT 1 FROM documents WHERE document_id = ?", (document_id,)).fetchone() is None:
                return False
            put_original(connection, document_id, OriginalFile(content, content_type, filename))
            return True

        return await self._write(put)

    async def get_original(self, document_id: str) -> Original | None:
        """The original, read in pieces from one snapshot (`read_original`)."""
        return await read_original(self.path, self._readers, document_id)

    # --- document reads ------------------------------------------------------------------------
    async def _one_document(self, sql: str, *params: str) -> DocumentRecord | None:
        def one(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute(sql, params).fetchone()
            return row_to_document(row) if row else None

        return await self._read(one)

    async def get_document(self, document_id: str) -> DocumentRecord | None:
        return await self._one_document("SELECT * FROM documents WHERE document_id = ?", document_id)

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        sql = "SELECT * FROM documents WHERE collection_id = ? AND source_id = ?"
        return await self._one_document(sql, collection_id, source_id)

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        sql = (
            "SELECT * FROM documents WHERE content_hash = ? AND collection_id = ?"
            " ORDER BY created_at DESC, document_id LIMIT 1"
        )
        return await self._one_document(sql, content_hash, collection_id)

    async def list_documents(
        self,
        *,
        offset: int,
        limit: int,
        tag: str | None = None,
        collection_ids: Sequence[str] = (),
        sort: DocumentSort = "created_at",
        order: SortOrder = "desc",
        filename: str | None = None,
    ) -> DocumentPage:
        def page(connection: sqlite3.Connection) -> DocumentPage:
            return document_page(
                connection,
                offset=offset,
                limit=limit,
                tag=tag,
                collection_ids=collection_ids,
                sort=sort,
                order=order,
                filename=filename,
            )

        return await self._read(page)

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        return await self._read(lambda c: found_documents(c, reference, limit=limit, collection_ids=collection_ids))

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        return await self._read(lambda connection: sources(connection, collection_ids))

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        return await self._read(lambda c: chunk_listing(c, document_id, offset=offset, limit=limit))

    async def count_chunks(self) -> int:
        return await self._read(lambda c: c.execute("SELECT count(*) FROM chunks").fetchone()[0])

    async def check_integrity(self) -> list[str]:
        """Problems found by `integrity_problems` (empty: consistent). Runs on the writer thread, so
        it sees no write half-done."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, lambda: integrity_problems(self._connection()))

    # --- collections ---------------------------------------------------------------------------
    # The registered ids are kept by the writer thread, in the transaction that changes them.
    async def create_collection(self, collection: Collection) -> Collection:
        def create(connection: sqlite3.Connection) -> Collection:
            created = insert_collection(connection, collection)
            self._collection_ids = self._collection_ids | {collection.collection_id}
            return created

        return await self._write(create)

    async def list_collections(self) -> list[Collection]:
        return await self._read(all_collections)

    async def rename_collection(self, collection_id: str, name: str) -> Collection | None:
        return await self._write(lambda connection: rename_collection(connection, collection_id, name))

    async def delete_collection(self, collection_id: str) -> bool:
        def delete(connection: sqlite3.Connection) -> bool:
            removed = delete_collection(connection, collection_id)
            self._collection_ids = self._collection_ids - {collection_id}
            return removed

        return await self._write(delete)

    # --- search legs ---------------------------------------------------------------------------
    def _without_redundant_collections(self, filters: SearchFilters) -> SearchFilters:
        """The filters without a collection restriction that covers every collection (the common
        case of a store with only ``default``), so such a search takes the unfiltered fast path."""
        if filters.collection_ids and self._collection_ids.issubset(filters.collection_ids):
            return dataclasses.replace(filters, collection_ids=())
        return filters

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0 or fts_match_expression(query) is None:
            return []
        return await self._read(lexical_leg(self.indexes, query, k, self._without_redundant_collections(filters)))

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> VectorHits:
        if k <= 0:
            return VectorHits()
        return VectorHits(
            await self._read(vector_leg(self.indexes, vector, k, self._without_redundant_collections(filters)))
        )

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        if not centres:
            return []
        return await self._read(windows_read(centres, radius))

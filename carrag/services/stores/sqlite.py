"""The embedded default store: one SQLite file (seed 004).

- ``documents`` and ``chunks`` tables; chunk vectors as float32 BLOBs with their dimension in ``meta``.
- ``chunks_fts``: an FTS5 index over chunk text (porter stemming), kept in sync by triggers, so it
  changes in the same transaction as the chunks it indexes. BM25 runs here (`lexical_search`).
- ``chunk_changes``: every chunk insert and delete, written by triggers in the same transaction.
  The search indexes beside the file (`search_indexes.py`: tantivy for BM25, a usearch HNSW graph
  plus an exact delta for kNN) follow this log and are rebuilt from SQLite when missing or stale;
  searches with filters run on SQLite alone (FTS5, exact kNN over the filtered rows).
- One process per store file (`process_lock.py`): a second one is refused with a clear error.
- ``originals``: the uploaded bytes of a document (KEEP_ORIGINALS), written in the document's own
  transaction and deleted with it by the foreign key's cascade (replacing a version, deleting, wiping).
  A download reads them in pieces from its own read transaction (`get_original`).
- WAL journal: readers never block the writer or each other. All writes go through one writer
  thread, one transaction per document, so a document's chunks appear (or vanish) all at once and
  a crash mid-ingest leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import logging
import sqlite3
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from carrag.services.errors import Conflict, DependencyUnavailable, NotFound
from carrag.services.ids import chunk_id
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
    chunk_heading,
)
from carrag.services.stores.base import (
    ChunkListing,
    DocumentPage,
    DocumentSort,
    SortOrder,
    checked_vectors,
    is_glob,
)
from carrag.services.stores.fts_query import fts_match_expression, query_terms
from carrag.services.stores.process_lock import ProcessLock
from carrag.services.stores.search_indexes import SearchIndexes
from carrag.services.stores.sqlite_collections import COLLECTION_SCHEMA, documents_table, migrate_to_collections
from carrag.services.stores.sqlite_metadata import add_metadata_filters, add_missing_columns, index_user_metadata

T = TypeVar("T")
logger = logging.getLogger(__name__)

INDEX_SYNC_IDLE_SECONDS = 0.5
ORIGINAL_PIECE_BYTES = 1024 * 1024  # a download reads the kept original this much at a time

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS collections (
    collection_id TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL,
    filename    TEXT NOT NULL,
    source_type TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    tags        TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    title       TEXT,
    external_id TEXT,
    created_at  TEXT NOT NULL,
    collection_id TEXT NOT NULL DEFAULT 'default' REFERENCES collections(collection_id) ON DELETE CASCADE,
    UNIQUE (collection_id, source_id)
);
CREATE INDEX IF NOT EXISTS documents_created ON documents(created_at);
CREATE INDEX IF NOT EXISTS documents_content_hash ON documents(content_hash);
CREATE TABLE IF NOT EXISTS document_tags (
    tag         TEXT NOT NULL,
    document_id TEXT NOT NULL REFERENCES documents(document_id) ON DELETE CASCADE,
    PRIMARY KEY (tag, document_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_tags_document ON document_tags(document_id);
CREATE TABLE IF NOT EXISTS document_metadata (
    pair        TEXT NOT NULL,  -- `key=value` (`metadata_pairs`), what metadata filters match
    document_id TEXT NOT NULL REFERENCES documents(document_id) ON DELETE CASCADE,
    PRIMARY KEY (pair, document_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_metadata_document ON document_metadata(document_id);
CREATE TABLE IF NOT EXISTS chunks (
    id          INTEGER PRIMARY KEY,
    chunk_id    TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES documents(document_id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    text        TEXT NOT NULL,
    heading     TEXT NOT NULL DEFAULT '',
    char_start  INTEGER NOT NULL,
    char_end    INTEGER NOT NULL,
    pages       TEXT NOT NULL,
    section     TEXT,
    embedding   BLOB NOT NULL,
    UNIQUE (document_id, chunk_index)
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, heading, content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading) VALUES ('delete', old.id, old.text, old.heading);
END;
CREATE TABLE IF NOT EXISTS chunk_changes (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_rowid INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS chunk_changes_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_changes(chunk_rowid) VALUES (new.id);
END;
CREATE TRIGGER IF NOT EXISTS chunk_changes_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_changes(chunk_rowid) VALUES (old.id);
END;
CREATE TABLE IF NOT EXISTS originals (
    document_id  TEXT PRIMARY KEY REFERENCES documents(document_id) ON DELETE CASCADE,
    filename     TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL,
    content      BLOB NOT NULL
);
-- `carrag reindex`: the next model's vectors, built beside the live ones (sqlite_reindex.py)
CREATE TABLE IF NOT EXISTS reindex_vectors (
    chunk_rowid INTEGER PRIMARY KEY,
    embedding   BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS reindex_vectors_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM reindex_vectors WHERE chunk_rowid = old.id;
END;
"""

# BM25 column weights: chunk text, then its heading (document title / section path). Equal weights
# score the heading as if it were part of the chunk, like BM25 over "title + text" (on SciFact
# 0.5 → 1.0 moved BM25 nDCG@10 from 0.677 to 0.683; docs/benchmarks.md).
BM25_WEIGHTS = (1.0, 1.0)

_CHUNK_COLUMNS = """
    c.id, c.document_id, c.chunk_index, c.text, c.char_start, c.char_end, c.pages, c.section,
    d.filename, d.source_id, d.tags, d.title, d.external_id, d.collection_id
"""


def _row_to_chunk(row: sqlite3.Row) -> StoredChunk:
    return StoredChunk(
        document_id=row["document_id"],
        chunk_index=row["chunk_index"],
        text=row["text"],
        char_start=row["char_start"],
        char_end=row["char_end"],
        filename=row["filename"],
        source_id=row["source_id"],
        tags=json.loads(row["tags"]),
        pages=json.loads(row["pages"]),
        section=row["section"],
        title=row["title"],
        external_id=row["external_id"],
        collection_id=row["collection_id"],
    )


def _row_to_document(row: sqlite3.Row) -> DocumentRecord:
    return DocumentRecord(
        document_id=row["document_id"],
        filename=row["filename"],
        source_id=row["source_id"],
        source_type=row["source_type"],
        content_hash=row["content_hash"],
        chunk_count=row["chunk_count"],
        tags=json.loads(row["tags"]),
        metadata=json.loads(row["metadata"]),
        created_at=row["created_at"],
        title=row["title"],
        external_id=row["external_id"],
        user_metadata=json.loads(row["user_metadata"]),
        collection_id=row["collection_id"],
    )


def _row_to_collection(row: sqlite3.Row) -> Collection:
    return Collection(row["collection_id"], row["name"], row["created_at"], row["document_count"])


_COLLECTIONS_SQL = (
    "SELECT c.collection_id, c.name, c.created_at,"
    " (SELECT count(*) FROM documents d WHERE d.collection_id = c.collection_id) AS document_count"
    " FROM collections c"
)


def _filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    """SQL conditions on ``d`` (documents) for the filters both legs honour."""
    clauses: list[str] = []
    params: list[Any] = []
    if filters.tags:
        marks = ",".join("?" * len(filters.tags))
        clauses.append(f"d.document_id IN (SELECT document_id FROM document_tags WHERE tag IN ({marks}))")
        params.extend(filters.tags)
    if filters.source is not None:
        clauses.append("d.source_id GLOB ?" if filters.source_is_glob else "d.source_id = ?")
        params.append(filters.source)
    if filters.document_ids:
        marks = ",".join("?" * len(filters.document_ids))
        clauses.append(f"d.document_id IN ({marks})")
        params.extend(filters.document_ids)
    if filters.collection_ids:
        marks = ",".join("?" * len(filters.collection_ids))
        clauses.append(f"d.collection_id IN ({marks})")
        params.extend(filters.collection_ids)
    add_metadata_filters(filters, clauses, params)
    return (" AND ".join(clauses), params)


def integrity_problems(connection: sqlite3.Connection) -> list[str]:
    """Everything that would make the store inconsistent, as readable lines (empty: consistent).

    SQLite's own page-level check, foreign keys, every document's ``chunk_count`` against its
    chunks (indexes 0..n-1, no gaps), one vector of the stored dimension per chunk, and the FTS5
    index against the chunks table. Used by tests (crash safety) and `carrag`-side diagnostics.
    """
    problems: list[str] = []
    result = [row[0] for row in connection.execute("PRAGMA integrity_check")]
    if result != ["ok"]:
        problems.extend(f"sqlite: {line}" for line in result)
    for table, rowid, parent, _ in connection.execute("PRAGMA foreign_key_check"):
        problems.append(f"{table} row {rowid} points at a missing {parent} row")
    for document_id, declared, actual, lowest, highest in connection.execute(
        "SELECT d.document_id, d.chunk_count, count(c.id), min(c.chunk_index), max(c.chunk_index)"
        " FROM documents d LEFT JOIN chunks c ON c.document_id = d.document_id GROUP BY d.document_id"
    ):
        if declared != actual:
            problems.append(f"document {document_id} declares {declared} chunks but has {actual}")
        elif actual and (lowest != 0 or highest != actual - 1):
            problems.append(f"document {document_id} has chunk indexes {lowest}..{highest} for {actual} chunks")
    orphans = connection.execute(
        "SELECT count(*) FROM chunks WHERE document_id NOT IN (SELECT document_id FROM documents)"
    ).fetchone()[0]
    if orphans:
        problems.append(f"{orphans} chunks belong to no document")
    row = connection.execute("SELECT value FROM meta WHERE key = 'embedding_dimension'").fetchone()
    chunk_total = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    if row is None and chunk_total:
        problems.append(f"{chunk_total} chunks but no embedding dimension recorded")
    elif row is not None:
        wrong = connection.execute(
            "SELECT count(*) FROM chunks WHERE embedding IS NULL OR length(embedding) != ?", (int(row[0]) * 4,)
        ).fetchone()[0]
        if wrong:
            problems.append(f"{wrong} chunks lack a vector of dimension {row[0]}")
    indexed = connection.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
    orphaned = connection.execute(
        "SELECT count(*) FROM originals WHERE document_id NOT IN (SELECT document_id FROM documents)"
    ).fetchone()[0]
    if orphaned:
        problems.append(f"{orphaned} kept originals belong to no document")
    truncated = connection.execute("SELECT count(*) FROM originals WHERE length(content) != size").fetchone()[0]
    if truncated:
        problems.append(f"{truncated} kept originals do not have their recorded size")
    if indexed != chunk_total:
        problems.append(f"the FTS index holds {indexed} rows for {chunk_total} chunks")
    try:
        # rank = 1: also compare the index with the external content (the chunks table)
        connection.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        problems.append(f"FTS index: {exc}")
    return problems


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
        self._index_syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-index-sync")
        self._sync_timer: threading.Timer | None = None
        self._sync_timer_lock = threading.Lock()
        self.indexes = SearchIndexes(self.path.with_name(self.path.name + ".indexes"))
        # the registered collections' ids, kept by the (single) writer: a search over all of them
        # needs no collection filter, so it keeps the fast unfiltered path (tantivy, HNSW)
        self._collection_ids: frozenset[str] = frozenset({DEFAULT_COLLECTION})
        self._pruned_below = 0  # change-log rows before this seq are gone

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
            return await loop.run_in_executor(self._readers, lambda: function(self._connection()))
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"SQLite read failed: {exc}") from exc

    async def _write(self, function: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``function`` in one IMMEDIATE transaction on the single writer thread."""

        def run() -> T:
            connection = self._connection()
            connection.execute("BEGIN IMMEDIATE")
            try:
                result = function(connection)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            self._schedule_index_sync()
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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DependencyUnavailable("store", f"cannot create {self.path.parent}: {exc}") from exc

        if self._closed:  # reopened after close
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
            self._readers = ThreadPoolExecutor(max_workers=self._reader_threads, thread_name_prefix="sqlite-reader")
            self._local = threading.local()
            self._index_syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-index-sync")
            self._closed = False
        self._process_lock.acquire()

        def create(connection: sqlite3.Connection) -> None:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise DependencyUnavailable("store", f"SQLite refused WAL mode (got {mode})")
            connection.executescript(SCHEMA)
            connection.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('index_epoch', ?)", (uuid.uuid4().hex,))
            migrate_to_collections(connection, documents_table(SCHEMA), datetime.now(UTC).isoformat())
            add_missing_columns(connection)  # after the rebuild of the documents table above
            connection.executescript(COLLECTION_SCHEMA)
            self._collection_ids = frozenset(r[0] for r in connection.execute("SELECT collection_id FROM collections"))

        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._writer, lambda: create(self._connection()))
            await self._read(self.indexes.sync)  # open the indexes beside the file (rebuilt if stale)
            self._prune_change_log()
        except sqlite3.DatabaseError as exc:
            self._process_lock.release()
            raise DependencyUnavailable("store", f"cannot open SQLite database {self.path}: {exc}") from exc
        except BaseException:
            self._process_lock.release()
            raise

    async def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._sync_timer_lock:
            self._closed = True
            if self._sync_timer is not None:
                self._sync_timer.cancel()
        self._index_syncer.shutdown(wait=True)
        self.indexes.close()
        with self._connections_lock:
            for connection in self._connections:
                try:
                    connection.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()
        self._process_lock.release()

    def _schedule_index_sync(self) -> None:
        """Catch the indexes up once writes pause for `INDEX_SYNC_IDLE_SECONDS`, so the next search
        finds them current; during a stream of writes nothing runs (a search would catch up itself)."""
        with self._sync_timer_lock:
            if self._closed:
                return
            if self._sync_timer is not None:
                self._sync_timer.cancel()
            self._sync_timer = threading.Timer(INDEX_SYNC_IDLE_SECONDS, self._sync_in_background)
            self._sync_timer.daemon = True
            self._sync_timer.start()

    def _sync_in_background(self) -> None:
        with self._sync_timer_lock:
            if self._closed:
                return
            self._index_syncer.submit(self._background_sync)

    def _background_sync(self) -> None:
        try:
            self.indexes.sync(self._connection())
        except Exception:  # the next search retries and reports the failure
            logger.warning("catching up the search indexes failed; the next search retries", exc_info=True)
            return
        self._prune_change_log()

    async def sync_indexes(self) -> None:
        """Bring the search indexes up to the last committed write now (the next search would)."""
        await self._read(self.indexes.sync)
        self._prune_change_log()

    def _prune_change_log(self) -> None:
        """Delete the change-log rows both indexes have saved for good (`durable_seq`), on the writer
        thread. The row at that position stays, so the log's head never moves back (an index ahead
        of the head means an older copy of the database: rebuild)."""
        upto = self.indexes.durable_seq()
        with self._sync_timer_lock:
            if self._closed or upto <= self._pruned_below:
                return
            self._pruned_below = upto

        def prune() -> None:
            connection = self._connection()
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute("DELETE FROM chunk_changes WHERE seq < ?", (upto,))
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

        try:
            self._writer.submit(prune)
        except RuntimeError:  # closing: the next open prunes
            pass

    async def health(self) -> ComponentHealth:
        try:
            count = await self.count_chunks()
        except DependencyUnavailable as exc:
            return ComponentHealth("store", "unavailable", "sqlite", None, exc.message)
        return ComponentHealth("store", "ok", "sqlite", None, f"{self.path} ({count} chunks)")

    # --- embedding identity --------------------------------------------------------------------
    @staticmethod
    def _identity(connection: sqlite3.Connection) -> EmbeddingIdentity | None:
        rows = dict(
            connection.execute(
                "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')"
            ).fetchall()
        )
        if "embedding_dimension" not in rows:
            return None
        return EmbeddingIdentity(rows.get("embedding_model", ""), int(rows["embedding_dimension"]))

    async def embedding_identity(self) -> EmbeddingIdentity | None:
        return await self._read(self._identity)

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
            replaced = self._insert(connection, document, chunks, matrix, identity)
            if original is not None:
                self._put_original(connection, document.document_id, original)
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
            return [self._insert(connection, d, chunks, matrix, identity) for d, chunks, matrix in checked]

        return await self._write(write)

    def _insert(
        self,
        connection: sqlite3.Connection,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        matrix: np.ndarray,
        identity: EmbeddingIdentity,
    ) -> str | None:
        stored = self._identity(connection)
        if stored is not None:
            stored.check_accepts(identity)
        if stored is None or not stored.model:
            connection.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("embedding_model", identity.model), ("embedding_dimension", str(identity.dimension))],
            )
        if (
            connection.execute(
                "SELECT 1 FROM collections WHERE collection_id = ?", (document.collection_id,)
            ).fetchone()
            is None
        ):
            raise NotFound(f"collection {document.collection_id!r} does not exist")
        replaced = connection.execute(
            "SELECT document_id FROM documents WHERE collection_id = ? AND source_id = ?",
            (document.collection_id, document.source_id),
        ).fetchone()
        if replaced is not None:
            connection.execute("DELETE FROM documents WHERE document_id = ?", (replaced[0],))
        connection.execute(
            "INSERT INTO documents(document_id, source_id, filename, source_type, content_hash, chunk_count,"
            " tags, metadata, title, external_id, created_at, collection_id, user_metadata)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                document.document_id,
                document.source_id,
                document.filename,
                document.source_type,
                document.content_hash,
                len(chunks),
                json.dumps(document.tags),
                json.dumps(document.metadata, default=str),
                document.title,
                document.external_id,
                document.created_at,
                document.collection_id,
                json.dumps(document.user_metadata),
            ),
        )
        connection.executemany(
            "INSERT OR IGNORE INTO document_tags(tag, document_id) VALUES (?, ?)",
            [(tag, document.document_id) for tag in document.tags],
        )
        index_user_metadata(connection, document.document_id, document.user_metadata)
        connection.executemany(
            "INSERT INTO chunks(chunk_id, document_id, chunk_index, text, heading, char_start, char_end,"
            " pages, section, embedding) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    chunk_id(document.document_id, chunk.chunk_index),
                    document.document_id,
                    chunk.chunk_index,
                    chunk.text,
                    chunk_heading(document.title, chunk.section),
                    chunk.char_start,
                    chunk.char_end,
                    json.dumps(chunk.pages),
                    chunk.section,
                    matrix[position].tobytes(),
                )
                for position, chunk in enumerate(chunks)
            ],
        )
        return replaced[0] if replaced else None

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
        def update(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute("SELECT * FROM documents WHERE document_id = ?", (document_id,)).fetchone()
            if row is None:
                return None
            if tags is not None:
                connection.execute(
                    "UPDATE documents SET tags = ? WHERE document_id = ?", (json.dumps(tags), document_id)
                )
                connection.execute("DELETE FROM document_tags WHERE document_id = ?", (document_id,))
                connection.executemany(
                    "INSERT OR IGNORE INTO document_tags(tag, document_id) VALUES (?, ?)",
                    [(tag, document_id) for tag in tags],
                )
            if title is not None:
                connection.execute("UPDATE documents SET title = ? WHERE document_id = ?", (title, document_id))
                self._retitle_chunks(connection, document_id, title)
            if user_metadata is not None:
                connection.execute(
                    "UPDATE documents SET user_metadata = ? WHERE document_id = ?",
                    (json.dumps(user_metadata), document_id),
                )
                index_user_metadata(connection, document_id, user_metadata)
            return _row_to_document(
                connection.execute("SELECT * FROM documents WHERE document_id = ?", (document_id,)).fetchone()
            )

        return await self._write(update)

    @staticmethod
    def _retitle_chunks(connection: sqlite3.Connection, document_id: str, title: str) -> None:
        """Give each chunk the heading of the new title; FTS5 and the change log (which the side
        indexes replay) follow in the same transaction."""
        rows = connection.execute(
            "SELECT id, text, heading, section FROM chunks WHERE document_id = ?", (document_id,)
        ).fetchall()
        changed = [(row, chunk_heading(title, row["section"])) for row in rows]
        changed = [(row, heading) for row, heading in changed if heading != row["heading"]]
        connection.executemany(
            "INSERT INTO chunks_fts(chunks_fts, rowid, text, heading) VALUES ('delete', ?, ?, ?)",
            [(row["id"], row["text"], row["heading"]) for row, _ in changed],
        )
        connection.executemany("UPDATE chunks SET heading = ? WHERE id = ?", [(h, row["id"]) for row, h in changed])
        connection.executemany(
            "INSERT INTO chunks_fts(rowid, text, heading) VALUES (?, ?, ?)",
            [(row["id"], row["text"], heading) for row, heading in changed],
        )
        connection.executemany(
            "INSERT INTO chunk_changes(chunk_rowid) VALUES (?)", [(row["id"],) for row, _ in changed]
        )

    async def wipe(self) -> None:
        def wipe(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM originals")
            connection.execute("DELETE FROM documents")
            connection.execute("DELETE FROM chunks")
            connection.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
            connection.execute("DELETE FROM chunk_changes")
            connection.execute("DELETE FROM reindex_vectors")
            connection.execute(
                "DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dimension', 'reindex_model',"
                " 'reindex_dimension')"
            )
            # a new epoch: the indexes beside the file start again instead of replaying every delete
            connection.execute("UPDATE meta SET value = ? WHERE key = 'index_epoch'", (uuid.uuid4().hex,))

        await self._write(wipe)

    # --- originals -----------------------------------------------------------------------------
    @staticmethod
    def _put_original(connection: sqlite3.Connection, document_id: str, original: OriginalFile) -> None:
        connection.execute(
            "INSERT INTO originals(document_id, filename, content_type, size, content) VALUES (?,?,?,?,?)"
            " ON CONFLICT(document_id) DO UPDATE SET filename = excluded.filename,"
            " content_type = excluded.content_type, size = excluded.size, content = excluded.content",
            (document_id, original.filename, original.content_type, len(original.content), original.content),
        )

    async def put_original(self, document_id: str, content: bytes, content_type: str, filename: str) -> bool:
        def put(connection: sqlite3.Connection) -> bool:
            if connection.execute("SELECT 1 FROM documents WHERE document_id = ?", (document_id,)).fetchone() is None:
                return False
            self._put_original(connection, document_id, OriginalFile(content, content_type, filename))
            return True

        return await self._write(put)

    async def get_original(self, document_id: str) -> Original | None:
        """The original, read in pieces by a connection of its own inside one read transaction: the
        download sees one snapshot (WAL), even if the document is replaced or deleted meanwhile."""
        loop = asyncio.get_running_loop()

        def open_snapshot() -> tuple[sqlite3.Connection, sqlite3.Blob, sqlite3.Row] | None:
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            try:
                connection.row_factory = sqlite3.Row
                connection.execute("BEGIN")
                row = connection.execute(
                    "SELECT rowid, filename, content_type, size FROM originals WHERE document_id = ?", (document_id,)
                ).fetchone()
                if row is None:
                    connection.close()
                    return None
                return connection, connection.blobopen("originals", "content", row["rowid"], readonly=True), row
            except BaseException:
                connection.close()
                raise

        try:
            opened = await loop.run_in_executor(self._readers, open_snapshot)
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"SQLite read failed: {exc}") from exc
        if opened is None:
            return None
        connection, blob, row = opened

        def close(_: object = None) -> None:
            blob.close()
            connection.close()

        async def pieces() -> AsyncIterator[bytes]:
            reading: concurrent.futures.Future[bytes] | None = None
            try:
                while True:
                    reading = self._readers.submit(blob.read, ORIGINAL_PIECE_BYTES)
                    piece = await asyncio.wrap_future(reading)
                    if not piece:
                        break
                    yield piece
            finally:
                # a download cancelled mid-read (the client went away) closes once that read is over
                if reading is not None and not reading.done():
                    reading.add_done_callback(close)
                else:
                    close()

        return Original(document_id, row["filename"], row["content_type"], row["size"], pieces())

    # --- document reads ------------------------------------------------------------------------
    async def get_document(self, document_id: str) -> DocumentRecord | None:
        def get(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute("SELECT * FROM documents WHERE document_id = ?", (document_id,)).fetchone()
            return _row_to_document(row) if row else None

        return await self._read(get)

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        def find(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute(
                "SELECT * FROM documents WHERE collection_id = ? AND source_id = ?", (collection_id, source_id)
            ).fetchone()
            return _row_to_document(row) if row else None

        return await self._read(find)

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        def find(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute(
                "SELECT * FROM documents WHERE content_hash = ? AND collection_id = ?"
                " ORDER BY created_at DESC, document_id LIMIT 1",
                (content_hash, collection_id),
            ).fetchone()
            return _row_to_document(row) if row else None

        return await self._read(find)

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
        conditions: list[str] = []
        params: list[Any] = []
        if tag is not None:
            conditions.append("document_id IN (SELECT document_id FROM document_tags WHERE tag = ?)")
            params.append(tag)
        if collection_ids:
            conditions.append(f"collection_id IN ({','.join('?' * len(collection_ids))})")
            params.extend(collection_ids)
        if filename is not None:
            conditions.append("lower(filename) GLOB ?" if is_glob(filename) else "instr(lower(filename), ?) > 0")
            params.append(filename.lower())
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        direction = "ASC" if order == "asc" else "DESC"
        key = {"created_at": "created_at", "filename": "lower(filename)", "chunk_count": "chunk_count"}[sort]

        def page(connection: sqlite3.Connection) -> DocumentPage:
            total = connection.execute(f"SELECT count(*) FROM documents {where}", params).fetchone()[0]
            rows = connection.execute(
                f"SELECT * FROM documents {where} ORDER BY {key} {direction}, document_id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return DocumentPage([_row_to_document(r) for r in rows], total)

        return await self._read(page)

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        def find(connection: sqlite3.Connection) -> DocumentPage:
            # an id prefix as a range (the primary key's index); a file name as the source id's last segment
            where = (
                "((document_id >= :ref AND document_id < :ref || char(1114111)) OR source_id = :ref"
                " OR substr(source_id, -length(:ref) - 1) = '/' || :ref)"
            )
            params: dict[str, Any] = {"ref": reference, "limit": limit}
            if collection_ids:
                names = [f":collection{i}" for i in range(len(collection_ids))]
                where += f" AND collection_id IN ({','.join(names)})"
                params.update({name[1:]: value for name, value in zip(names, collection_ids, strict=True)})
            total = connection.execute(f"SELECT count(*) FROM documents WHERE {where}", params).fetchone()[0]
            rows = connection.execute(
                f"SELECT * FROM documents WHERE {where} ORDER BY document_id = :ref DESC, source_id = :ref DESC,"
                " created_at DESC, document_id LIMIT :limit",
                params,
            ).fetchall()
            return DocumentPage([_row_to_document(r) for r in rows], total)

        return await self._read(find)

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        where = f" WHERE collection_id IN ({','.join('?' * len(collection_ids))})" if collection_ids else ""

        def sources(connection: sqlite3.Connection) -> list[tuple[str, str]]:
            return [
                (r[0], r[1])
                for r in connection.execute(
                    f"SELECT source_id, source_type FROM documents{where} ORDER BY source_id", list(collection_ids)
                )
            ]

        return await self._read(sources)

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        def chunks(connection: sqlite3.Connection) -> list[ChunkListing]:
            rows = connection.execute(
                f"SELECT {_CHUNK_COLUMNS}, length(c.embedding) AS vector_bytes FROM chunks c"
                " JOIN documents d ON d.document_id = c.document_id"
                " WHERE c.document_id = ? ORDER BY c.chunk_index LIMIT ? OFFSET ?",
                (document_id, limit, offset),
            ).fetchall()
            return [ChunkListing(_row_to_chunk(r), r["vector_bytes"] // 4) for r in rows]

        return await self._read(chunks)

    async def count_chunks(self) -> int:
        return await self._read(lambda c: c.execute("SELECT count(*) FROM chunks").fetchone()[0])

    async def check_integrity(self) -> list[str]:
        """Problems found by `integrity_problems` (empty: consistent). Runs on the writer thread, so
        it sees no write half-done."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, lambda: integrity_problems(self._connection()))

    # --- collections ---------------------------------------------------------------------------
    async def create_collection(self, collection: Collection) -> Collection:
        def create(connection: sqlite3.Connection) -> Collection:
            try:
                connection.execute(
                    "INSERT INTO collections(collection_id, name, created_at) VALUES (?, ?, ?)",
                    (collection.collection_id, collection.name, collection.created_at),
                )
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"collection {collection.name!r} already exists") from exc
            self._collection_ids = self._collection_ids | {collection.collection_id}
            return dataclasses.replace(collection, document_count=0)

        return await self._write(create)

    async def list_collections(self) -> list[Collection]:
        def collections(connection: sqlite3.Connection) -> list[Collection]:
            return [_row_to_collection(r) for r in connection.execute(f"{_COLLECTIONS_SQL} ORDER BY c.name")]

        return await self._read(collections)

    async def rename_collection(self, collection_id: str, name: str) -> Collection | None:
        def rename(connection: sqlite3.Connection) -> Collection | None:
            try:
                changed = connection.execute(
                    "UPDATE collections SET name = ? WHERE collection_id = ?", (name, collection_id)
                ).rowcount
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"collection {name!r} already exists") from exc
            if not changed:
                return None
            row = connection.execute(f"{_COLLECTIONS_SQL} WHERE c.collection_id = ?", (collection_id,)).fetchone()
            return _row_to_collection(row)

        return await self._write(rename)

    async def delete_collection(self, collection_id: str) -> bool:
        def delete(connection: sqlite3.Connection) -> bool:
            # documents first (their chunks and tags follow by cascade; the change log records each
            # chunk for the side indexes), then the registry row, in one transaction
            connection.execute("DELETE FROM documents WHERE collection_id = ?", (collection_id,))
            removed = connection.execute("DELETE FROM collections WHERE collection_id = ?", (collection_id,)).rowcount
            self._collection_ids = self._collection_ids - {collection_id}
            return bool(removed)

        return await self._write(delete)

    # --- search legs ---------------------------------------------------------------------------
    def _rows_by_id(self, connection: sqlite3.Connection, rowids: Sequence[int], vectors: bool = False) -> dict:
        if not rowids:
            return {}
        extra = ", c.embedding" if vectors else ""
        rows: dict[int, sqlite3.Row] = {}
        for offset in range(0, len(rowids), 900):
            part = list(rowids[offset : offset + 900])
            marks = ",".join("?" * len(part))
            for row in connection.execute(
                f"SELECT {_CHUNK_COLUMNS}{extra} FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                f" WHERE c.id IN ({marks})",
                part,
            ):
                rows[row["id"]] = row
        return rows

    def _without_redundant_collections(self, filters: SearchFilters) -> SearchFilters:
        """The filters without a collection restriction that covers every collection (the common
        case of a store with only ``default``), so such a search takes the unfiltered fast path."""
        if filters.collection_ids and self._collection_ids.issubset(filters.collection_ids):
            return dataclasses.replace(filters, collection_ids=())
        return filters

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0 or fts_match_expression(query) is None:
            return []
        filters = self._without_redundant_collections(filters)
        if not _filter_sql(filters)[0]:
            terms = query_terms(query)
            fts5 = self._fts5_search(query, k, filters)

            def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
                def in_rows(hits: list[tuple[int, float]]) -> list[ScoredChunk]:
                    rows = self._rows_by_id(connection, [rowid for rowid, _ in hits])
                    return [ScoredChunk(_row_to_chunk(rows[rowid]), score) for rowid, score in hits if rowid in rows]

                return self.indexes.search(
                    connection,
                    lambda: self.indexes.lexical.search(terms, k),
                    in_rows,
                    lexical=True,
                    fallback=lambda: fts5(connection),
                )

            return await self._read(search)
        return await self._read(self._fts5_search(query, k, filters))

    def _fts5_search(
        self, query: str, k: int, filters: SearchFilters
    ) -> Callable[[sqlite3.Connection], list[ScoredChunk]]:
        """BM25 on SQLite's FTS5 index: searches with filters (bounded by the filter), and small
        stores while the tantivy index catches up."""
        expression = fts_match_expression(query)
        where, params = _filter_sql(filters)
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        # Rank inside the FTS index first and join only the best k rows: joining every match to
        # its chunk and document row before sorting cost 3-5x more at 100k chunks.
        allowed = (
            f" AND rowid IN (SELECT c.id FROM chunks c JOIN documents d ON d.document_id = c.document_id WHERE {where})"
            if where
            else ""
        )
        sql = (
            f"WITH best AS (SELECT rowid, bm25(chunks_fts, {weights}) AS rank FROM chunks_fts"
            f" WHERE chunks_fts MATCH ?{allowed} ORDER BY rank LIMIT ?)"
            f" SELECT {_CHUNK_COLUMNS}, best.rank AS rank FROM best JOIN chunks c ON c.id = best.rowid"
            " JOIN documents d ON d.document_id = c.document_id ORDER BY best.rank"
        )

        def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
            rows = connection.execute(sql, [expression, *params, k]).fetchall()
            # FTS5's bm25() is negated so that smaller is better; flip it back to a positive score.
            return [ScoredChunk(_row_to_chunk(r), -float(r["rank"])) for r in rows]

        return search

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0:
            return []
        where, params = _filter_sql(self._without_redundant_collections(filters))
        query = np.asarray(vector, dtype=np.float32).reshape(-1)

        def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
            if where:
                scored = _exact_top_k(
                    connection.execute(
                        f"SELECT c.id, c.embedding FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                        f" WHERE {where}",
                        params,
                    ),
                    query,
                    k,
                )
                rows = self._rows_by_id(connection, [rowid for rowid, _ in scored])
                return [ScoredChunk(_row_to_chunk(rows[r]), score) for r, score in scored if r in rows]

            def in_rows(candidates: list[int]) -> list[ScoredChunk]:
                rows = self._rows_by_id(connection, candidates, vectors=True)
                # the candidates' exact cosine, from the float32 vectors SQLite holds
                scored = _exact_top_k(((r["id"], r["embedding"]) for r in rows.values()), query, k)
                return [ScoredChunk(_row_to_chunk(rows[r]), score) for r, score in scored]

            return self.indexes.search(connection, lambda: self.indexes.vectors.candidates(query, k), in_rows)

        return await self._read(search)

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        if not centres:
            return []
        conditions = " OR ".join("(c.document_id = ? AND c.chunk_index BETWEEN ? AND ?)" for _ in centres)
        params: list[Any] = []
        for document_id, index in centres:
            params.extend((document_id, index - radius, index + radius))

        def windows(connection: sqlite3.Connection) -> list[StoredChunk]:
            rows = connection.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                f" WHERE {conditions} ORDER BY c.document_id, c.chunk_index",
                params,
            ).fetchall()
            return [_row_to_chunk(r) for r in rows]

        return await self._read(windows)


def _exact_top_k(rows: Any, query: np.ndarray, k: int, batch: int = 20_000) -> list[tuple[int, float]]:
    """The ``k`` best (rowid, cosine) of (rowid, float32 BLOB) rows, read in bounded batches."""
    norm = float(np.linalg.norm(query)) or 1.0
    best_ids = np.empty(0, dtype=np.int64)
    best_scores = np.empty(0, dtype=np.float32)
    iterator = iter(rows)
    while True:
        part = [row for _, row in zip(range(batch), iterator, strict=False)]
        if not part:
            break
        ids = np.fromiter((r[0] for r in part), dtype=np.int64, count=len(part))
        matrix = np.frombuffer(b"".join(r[1] for r in part), dtype=np.float32).reshape(len(part), -1)
        if matrix.shape[1] != query.shape[0]:
            return []
        norms = np.linalg.norm(matrix, axis=1)
        scores = (matrix @ query) / (np.where(norms == 0, 1, norms) * norm)
        best_ids = np.concatenate([best_ids, ids])
        best_scores = np.concatenate([best_scores, scores.astype(np.float32)])
        if best_ids.size > k:
            keep = np.argpartition(-best_scores, k - 1)[:k]
            best_ids, best_scores = best_ids[keep], best_scores[keep]
    order = np.lexsort((best_ids, -best_scores))
    return [(int(best_ids[i]), float(best_scores[i])) for i in order]

"""The embedded default store: one SQLite file (seed 004).

- ``documents`` and ``chunks`` tables; chunk vectors as float32 BLOBs with their dimension in ``meta``.
- ``chunks_fts``: an FTS5 index over chunk text (porter stemming), kept in sync by triggers, so it
  changes in the same transaction as the chunks it indexes. BM25 runs here (`lexical_search`).
- kNN is brute force over an in-memory copy of the vectors (`vector_index.py`).
- WAL journal: readers never block the writer or each other. All writes go through one writer
  thread, one transaction per document, so a document's chunks appear (or vanish) all at once and
  a crash mid-ingest leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from carrag.services.errors import DependencyUnavailable
from carrag.services.ids import chunk_id
from carrag.services.models import (
    Chunk,
    ComponentHealth,
    DocumentRecord,
    EmbeddingIdentity,
    ScoredChunk,
    SearchFilters,
    StoredChunk,
    chunk_heading,
)
from carrag.services.stores.base import ChunkListing, DocumentPage, checked_vectors
from carrag.services.stores.fts_query import fts_match_expression
from carrag.services.stores.vector_index import VectorIndex, VectorSnapshot, empty_snapshot

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL UNIQUE,
    filename    TEXT NOT NULL,
    source_type TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    tags        TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    title       TEXT,
    external_id TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_created ON documents(created_at);
CREATE INDEX IF NOT EXISTS documents_content_hash ON documents(content_hash);
CREATE TABLE IF NOT EXISTS document_tags (
    tag         TEXT NOT NULL,
    document_id TEXT NOT NULL REFERENCES documents(document_id) ON DELETE CASCADE,
    PRIMARY KEY (tag, document_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS document_tags_document ON document_tags(document_id);
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
"""

# BM25 column weights: chunk text, then its heading (document title / section path). Equal weights
# score the heading as if it were part of the chunk, like BM25 over "title + text" (on SciFact
# 0.5 → 1.0 moved BM25 nDCG@10 from 0.677 to 0.683; docs/benchmarks.md).
BM25_WEIGHTS = (1.0, 1.0)

_CHUNK_COLUMNS = """
    c.id, c.document_id, c.chunk_index, c.text, c.char_start, c.char_end, c.pages, c.section,
    d.filename, d.source_id, d.tags, d.title, d.external_id
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
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._readers = ThreadPoolExecutor(max_workers=reader_threads, thread_name_prefix="sqlite-reader")
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._vectors = VectorIndex()

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
            return result

        loop = asyncio.get_running_loop()
        try:
            # Shielded: once a write has started, it finishes (or rolls back) even if the request
            # that asked for it is cancelled, so cancellation never leaves a transaction open.
            return await asyncio.shield(loop.run_in_executor(self._writer, run))
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"SQLite write failed: {exc}") from exc

    @staticmethod
    def _generation(connection: sqlite3.Connection) -> int:
        row = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump_generation(connection: sqlite3.Connection) -> tuple[int, int]:
        before = SqliteStore._generation(connection)
        connection.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(before + 1),),
        )
        return before, before + 1

    # --- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DependencyUnavailable("store", f"cannot create {self.path.parent}: {exc}") from exc

        def create(connection: sqlite3.Connection) -> None:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise DependencyUnavailable("store", f"SQLite refused WAL mode (got {mode})")
            connection.executescript(SCHEMA)

        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._writer, lambda: create(self._connection()))
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"cannot open SQLite database {self.path}: {exc}") from exc

    async def close(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        with self._connections_lock:
            for connection in self._connections:
                try:
                    connection.close()
                except sqlite3.Error:
                    pass
            self._connections.clear()

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
    ) -> str | None:
        matrix = checked_vectors(chunks, vectors, identity)

        def write(connection: sqlite3.Connection) -> tuple[str | None, int, int, np.ndarray, np.ndarray]:
            stored = self._identity(connection)
            if stored is not None:
                stored.check_accepts(identity)
            if stored is None or not stored.model:
                connection.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [("embedding_model", identity.model), ("embedding_dimension", str(identity.dimension))],
                )
            replaced = connection.execute(
                "SELECT document_id FROM documents WHERE source_id = ?", (document.source_id,)
            ).fetchone()
            removed = np.empty(0, dtype=np.int64)
            if replaced is not None:
                removed = np.array(
                    [r[0] for r in connection.execute("SELECT id FROM chunks WHERE document_id = ?", (replaced[0],))],
                    dtype=np.int64,
                )
                connection.execute("DELETE FROM documents WHERE document_id = ?", (replaced[0],))
            connection.execute(
                "INSERT INTO documents(document_id, source_id, filename, source_type, content_hash, chunk_count,"
                " tags, metadata, title, external_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
                ),
            )
            connection.executemany(
                "INSERT OR IGNORE INTO document_tags(tag, document_id) VALUES (?, ?)",
                [(tag, document.document_id) for tag in document.tags],
            )
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
            added = np.array(
                [
                    r[0]
                    for r in connection.execute(
                        "SELECT id FROM chunks WHERE document_id = ? ORDER BY chunk_index", (document.document_id,)
                    )
                ],
                dtype=np.int64,
            )
            before, after = self._bump_generation(connection)
            return (replaced[0] if replaced else None, before, after, removed, added)

        replaced_id, before, after, removed, added = await self._write(write)
        order = np.argsort([chunk.chunk_index for chunk in chunks], kind="stable")
        self._vectors.apply_write(before, after, removed, added, matrix[order] if len(chunks) else matrix)
        return replaced_id

    async def delete_document(self, document_id: str) -> bool:
        def delete(connection: sqlite3.Connection) -> tuple[bool, int, int, np.ndarray]:
            removed = np.array(
                [r[0] for r in connection.execute("SELECT id FROM chunks WHERE document_id = ?", (document_id,))],
                dtype=np.int64,
            )
            deleted = connection.execute("DELETE FROM documents WHERE document_id = ?", (document_id,)).rowcount
            before, after = self._bump_generation(connection)
            return bool(deleted), before, after, removed

        deleted, before, after, removed = await self._write(delete)
        self._vectors.apply_write(
            before, after, removed, np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
        )
        return deleted

    async def wipe(self) -> None:
        def wipe(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM documents")
            connection.execute("DELETE FROM chunks")
            connection.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
            connection.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')")
            self._bump_generation(connection)

        await self._write(wipe)
        self._vectors.replace(empty_snapshot())

    # --- document reads ------------------------------------------------------------------------
    async def get_document(self, document_id: str) -> DocumentRecord | None:
        def get(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute("SELECT * FROM documents WHERE document_id = ?", (document_id,)).fetchone()
            return _row_to_document(row) if row else None

        return await self._read(get)

    async def find_by_source(self, source_id: str) -> DocumentRecord | None:
        def find(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute("SELECT * FROM documents WHERE source_id = ?", (source_id,)).fetchone()
            return _row_to_document(row) if row else None

        return await self._read(find)

    async def find_by_content_hash(self, content_hash: str) -> DocumentRecord | None:
        def find(connection: sqlite3.Connection) -> DocumentRecord | None:
            row = connection.execute(
                "SELECT * FROM documents WHERE content_hash = ? ORDER BY created_at DESC, document_id LIMIT 1",
                (content_hash,),
            ).fetchone()
            return _row_to_document(row) if row else None

        return await self._read(find)

    async def list_documents(self, *, offset: int, limit: int, tag: str | None = None) -> DocumentPage:
        def page(connection: sqlite3.Connection) -> DocumentPage:
            where, params = ("", [])
            if tag is not None:
                where, params = (
                    "WHERE document_id IN (SELECT document_id FROM document_tags WHERE tag = ?)",
                    [tag],
                )
            total = connection.execute(f"SELECT count(*) FROM documents {where}", params).fetchone()[0]
            rows = connection.execute(
                f"SELECT * FROM documents {where} ORDER BY created_at DESC, document_id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return DocumentPage([_row_to_document(r) for r in rows], total)

        return await self._read(page)

    async def list_sources(self) -> list[tuple[str, str]]:
        def sources(connection: sqlite3.Connection) -> list[tuple[str, str]]:
            return [
                (r[0], r[1])
                for r in connection.execute("SELECT source_id, source_type FROM documents ORDER BY source_id")
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

    # --- search legs ---------------------------------------------------------------------------
    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        expression = fts_match_expression(query)
        if expression is None or k <= 0:
            return []
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

        return await self._read(search)

    def _current_vectors(self, connection: sqlite3.Connection) -> VectorSnapshot:
        generation = self._generation(connection)
        snapshot = self._vectors.snapshot
        if snapshot.generation == generation:
            return snapshot
        with self._vectors.reload_lock:
            snapshot = self._vectors.snapshot
            if snapshot.generation == generation:
                return snapshot
            connection.execute("BEGIN")
            try:
                generation = self._generation(connection)
                identity = self._identity(connection)
                dimension = identity.dimension if identity else 0
                rows = connection.execute("SELECT id, embedding FROM chunks ORDER BY id").fetchall()
            finally:
                connection.execute("COMMIT")
            rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            if rows:
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dimension)
            else:
                matrix = np.empty((0, dimension), dtype=np.float32)
            snapshot = VectorSnapshot(generation, rowids, matrix)
            self._vectors.replace(snapshot)
            return snapshot

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        where, params = _filter_sql(filters)

        def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
            snapshot = self._current_vectors(connection)
            allowed = None
            if where:
                allowed = np.array(
                    [
                        r[0]
                        for r in connection.execute(
                            f"SELECT c.id FROM chunks c JOIN documents d ON d.document_id = c.document_id WHERE {where}",
                            params,
                        )
                    ],
                    dtype=np.int64,
                )
            hits = snapshot.search(vector, k, allowed)
            if not hits:
                return []
            marks = ",".join("?" * len(hits))
            rows = connection.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                f" WHERE c.id IN ({marks})",
                [rowid for rowid, _ in hits],
            ).fetchall()
            by_id = {r["id"]: r for r in rows}
            return [ScoredChunk(_row_to_chunk(by_id[rowid]), score) for rowid, score in hits if rowid in by_id]

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

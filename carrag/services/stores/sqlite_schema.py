"""The SQLite store's tables, how a file is opened onto them, and the check that they agree.

- ``documents`` and ``chunks`` tables; chunk vectors as float32 BLOBs with their dimension in ``meta``.
  Columns added since the first release (``documents.user_metadata``, ``chunks.regions``: where a PDF
  chunk is drawn on its pages) are added on open to a store that lacks them (`sqlite_metadata.py`).
- ``chunks_fts``: an FTS5 index over chunk text (porter stemming), kept in sync by triggers, so it
  changes in the same transaction as the chunks it indexes (searched in `sqlite_search.py`).
- ``chunk_changes``: every chunk insert and delete, written by triggers in the same transaction.
  The search indexes beside the file (`search_indexes.py`) follow this log.
- ``originals``: the uploaded bytes of a document (KEEP_ORIGINALS), deleted with it by the foreign
  key's cascade (`sqlite_originals.py`).
- ``reindex_vectors``: the next model's vectors during `carrag reindex` (`sqlite_reindex.py`).
- ``jobs``: ingest-job records (`sqlite_jobs.py`), created here with the rest. Every table exists once
  the file is open: a table created later, by another connection, changes the schema under running
  reads, and an FTS5 read that meets such a change can fail ("vtable constructor failed: chunks_fts").
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime

from carrag.services.errors import DependencyUnavailable
from carrag.services.stores.sqlite_collections import COLLECTION_SCHEMA, documents_table, migrate_to_collections
from carrag.services.stores.sqlite_metadata import add_missing_columns

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


# ingest-job records (`sqlite_jobs.py`)
JOBS_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id           TEXT PRIMARY KEY,
    revision         INTEGER NOT NULL,
    state            TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    lease_expires_at REAL,
    finished_at      REAL,
    record           TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs(created_at);
CREATE INDEX IF NOT EXISTS jobs_lease ON jobs(lease_expires_at) WHERE finished_at IS NULL;
"""


def create_schema(connection: sqlite3.Connection) -> frozenset[str]:
    """Put the store file in WAL mode, create (or migrate) its tables, and return the registered
    collections' ids."""
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise DependencyUnavailable("store", f"SQLite refused WAL mode (got {mode})")
    connection.executescript(SCHEMA)
    connection.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('index_epoch', ?)", (uuid.uuid4().hex,))
    migrate_to_collections(connection, documents_table(SCHEMA), datetime.now(UTC).isoformat())
    add_missing_columns(connection)  # after the rebuild of the documents table above
    connection.executescript(COLLECTION_SCHEMA)
    connection.executescript(JOBS_SCHEMA)
    return frozenset(r[0] for r in connection.execute("SELECT collection_id FROM collections"))


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

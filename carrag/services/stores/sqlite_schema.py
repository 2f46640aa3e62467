"""The SQLite store's tables, how a file is opened onto them (older files migrated), and the check
that they agree.

Chunk vectors are float32 BLOBs, their dimension in ``meta``. ``chunks_fts`` (FTS5, porter) and
``chunk_changes`` (the log the search indexes beside the file follow, `search_indexes.py`) are kept by
triggers in the transaction that changes the chunks. ``originals`` go with their document by the
foreign key's cascade; ``reindex_vectors`` holds the next model's vectors (`sqlite_reindex.py`).
Every table, ``jobs`` included, is created on open: a table created later by another connection
changes the schema under running reads, and an FTS5 read that meets that can fail ("vtable
constructor failed: chunks_fts").
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from datetime import UTC, datetime

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import DEFAULT_COLLECTION

logger = logging.getLogger(__name__)

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


# Created after the migrations below (a store from before collections has no documents.collection_id).
AFTER_MIGRATIONS = """
CREATE INDEX IF NOT EXISTS documents_collection_created ON documents(collection_id, created_at);
"""
# Columns added after the first release, created on open in a store that lacks them.
ADDED_COLUMNS = {
    "documents": {"user_metadata": "TEXT NOT NULL DEFAULT '{}'"},
    "chunks": {"regions": "TEXT"},  # where a PDF chunk is on its pages (`positions.encode_regions_json`)
}
# The documents table before collections, whose ``source_id`` was unique across the store.
_COLUMNS_BEFORE_COLLECTIONS = (
    "document_id, source_id, filename, source_type, content_hash, chunk_count, tags, metadata, title,"
    " external_id, created_at"
)


def create_schema(connection: sqlite3.Connection) -> frozenset[str]:
    """Put the store file in WAL mode, create (or migrate) its tables, and return the registered
    collections' ids."""
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise DependencyUnavailable("store", f"SQLite refused WAL mode (got {mode})")
    connection.executescript(SCHEMA)
    connection.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('index_epoch', ?)", (uuid.uuid4().hex,))
    connection.execute(
        "INSERT OR IGNORE INTO collections(collection_id, name, created_at) VALUES (?, ?, ?)",
        (DEFAULT_COLLECTION, DEFAULT_COLLECTION, datetime.now(UTC).isoformat()),
    )
    migrate_to_collections(connection)
    for table, columns in ADDED_COLUMNS.items():  # after the rebuild of the documents table
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        for name, declaration in columns.items():
            if name not in present:
                connection.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")
    connection.executescript(AFTER_MIGRATIONS)
    connection.executescript(JOBS_SCHEMA)
    return frozenset(r[0] for r in connection.execute("SELECT collection_id FROM collections"))


def migrate_to_collections(connection: sqlite3.Connection) -> None:
    """Move every document of a store from before collections into ``default``. The documents table is
    rebuilt (SQLite cannot drop the old UNIQUE(source_id) in place) with foreign keys off, so no chunk
    or tag is deleted, in one transaction that checks the foreign keys before it commits."""
    if "collection_id" in {row[1] for row in connection.execute("PRAGMA table_info(documents)")}:
        return
    start = SCHEMA.index("CREATE TABLE IF NOT EXISTS documents (")
    documents = SCHEMA[start : SCHEMA.index(");", start) + 2]
    connection.execute("PRAGMA foreign_keys = OFF")
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(documents.replace("IF NOT EXISTS documents (", "documents_migrated ("))
            connection.execute(
                f"INSERT INTO documents_migrated({_COLUMNS_BEFORE_COLLECTIONS}, collection_id)"
                f" SELECT {_COLUMNS_BEFORE_COLLECTIONS}, ? FROM documents",
                (DEFAULT_COLLECTION,),
            )
            connection.execute("DROP TABLE documents")
            connection.execute("ALTER TABLE documents_migrated RENAME TO documents")
            connection.execute("CREATE INDEX IF NOT EXISTS documents_created ON documents(created_at)")
            connection.execute("CREATE INDEX IF NOT EXISTS documents_content_hash ON documents(content_hash)")
            broken = connection.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise sqlite3.IntegrityError(f"moving documents into collections broke {len(broken)} references")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    finally:
        connection.execute("PRAGMA foreign_keys = ON")
    logger.info("moved the store's documents into the default collection")


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

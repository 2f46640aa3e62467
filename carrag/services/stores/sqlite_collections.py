"""The SQLite store's collections: the registry's reads and writes (each a function of the connection
inside `SqliteStore`'s read or write), and the migration by which a store file from before collections
(``source_id`` unique across the store, no ``collection_id``) gets the ``default`` collection and every
document in it."""

from __future__ import annotations

import dataclasses
import logging
import sqlite3

from carrag.services.errors import Conflict
from carrag.services.models import DEFAULT_COLLECTION, Collection

logger = logging.getLogger(__name__)

# After the migration below (a store from before collections has no documents.collection_id yet).
COLLECTION_SCHEMA = """
CREATE INDEX IF NOT EXISTS documents_collection_created ON documents(collection_id, created_at);
"""

# The documents table before collections: ``source_id`` unique across the store.
_DOCUMENT_COLUMNS_BEFORE_COLLECTIONS = (
    "document_id, source_id, filename, source_type, content_hash, chunk_count, tags, metadata, title,"
    " external_id, created_at"
)


def documents_table(schema: str) -> str:
    """The ``CREATE TABLE ... documents (...)`` statement of ``schema``."""
    table = schema[schema.index("CREATE TABLE IF NOT EXISTS documents (") :]
    return table[: table.index(");") + 2]


def migrate_to_collections(connection: sqlite3.Connection, documents_ddl: str, created_at: str) -> bool:
    """Give a store from before collections its ``default`` collection and move every document into it
    (``documents_ddl``: today's documents table, `documents_table`).

    The documents table is rebuilt (SQLite cannot drop the old UNIQUE(source_id) in place) with
    foreign keys off, so the rebuild deletes no chunk or tag, in one transaction; the foreign keys are
    checked before it commits. Returns whether anything was migrated."""
    connection.execute(
        "INSERT OR IGNORE INTO collections(collection_id, name, created_at) VALUES (?, ?, ?)",
        (DEFAULT_COLLECTION, DEFAULT_COLLECTION, created_at),
    )
    columns = {row[1] for row in connection.execute("PRAGMA table_info(documents)")}
    if "collection_id" in columns:
        return False
    connection.execute("PRAGMA foreign_keys = OFF")
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(documents_ddl.replace("IF NOT EXISTS documents (", "documents_migrated ("))
            connection.execute(
                f"INSERT INTO documents_migrated({_DOCUMENT_COLUMNS_BEFORE_COLLECTIONS}, collection_id)"
                f" SELECT {_DOCUMENT_COLUMNS_BEFORE_COLLECTIONS}, ? FROM documents",
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
    return True


COLLECTIONS_SQL = (
    "SELECT c.collection_id, c.name, c.created_at,"
    " (SELECT count(*) FROM documents d WHERE d.collection_id = c.collection_id) AS document_count"
    " FROM collections c"
)


def row_to_collection(row: sqlite3.Row) -> Collection:
    return Collection(row["collection_id"], row["name"], row["created_at"], row["document_count"])


def insert_collection(connection: sqlite3.Connection, collection: Collection) -> Collection:
    """Register ``collection`` (`Conflict` when its name is taken); it holds no document yet."""
    try:
        connection.execute(
            "INSERT INTO collections(collection_id, name, created_at) VALUES (?, ?, ?)",
            (collection.collection_id, collection.name, collection.created_at),
        )
    except sqlite3.IntegrityError as exc:
        raise Conflict(f"collection {collection.name!r} already exists") from exc
    return dataclasses.replace(collection, document_count=0)


def all_collections(connection: sqlite3.Connection) -> list[Collection]:
    """Every collection with its document count, by name."""
    return [row_to_collection(r) for r in connection.execute(f"{COLLECTIONS_SQL} ORDER BY c.name")]


def rename_collection(connection: sqlite3.Connection, collection_id: str, name: str) -> Collection | None:
    """Rename a collection (`Conflict` when the name is taken; None: no such collection)."""
    try:
        changed = connection.execute(
            "UPDATE collections SET name = ? WHERE collection_id = ?", (name, collection_id)
        ).rowcount
    except sqlite3.IntegrityError as exc:
        raise Conflict(f"collection {name!r} already exists") from exc
    if not changed:
        return None
    row = connection.execute(f"{COLLECTIONS_SQL} WHERE c.collection_id = ?", (collection_id,)).fetchone()
    return row_to_collection(row)


def delete_collection(connection: sqlite3.Connection, collection_id: str) -> bool:
    """Delete a collection with its documents; whether it existed."""
    # documents first (their chunks and tags follow by cascade; the change log records each
    # chunk for the side indexes), then the registry row, in one transaction
    connection.execute("DELETE FROM documents WHERE collection_id = ?", (collection_id,))
    return bool(connection.execute("DELETE FROM collections WHERE collection_id = ?", (collection_id,)).rowcount)

"""The SQLite store's writes, each a function of the connection inside the writer's transaction
(`SqliteStore._write`): a document and its chunks, its metadata, emptying the store."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence

import numpy as np

from carrag.services.errors import NotFound
from carrag.services.ids import chunk_id
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, MetadataValue, chunk_heading
from carrag.services.positions import encode_regions_json
from carrag.services.stores.sqlite_rows import index_user_metadata, row_to_document, stored_identity


def insert_document(
    connection: sqlite3.Connection,
    document: DocumentRecord,
    chunks: Sequence[Chunk],
    matrix: np.ndarray,
    identity: EmbeddingIdentity,
) -> str | None:
    """Write ``document`` with its chunks and vectors, replacing the older version of its source in
    its collection; the replaced document's id (None: a new source)."""
    stored = stored_identity(connection)
    if stored is not None:
        stored.check_accepts(identity)
    if stored is None or not stored.model:
        connection.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [("embedding_model", identity.model), ("embedding_dimension", str(identity.dimension))],
        )
    if (
        connection.execute("SELECT 1 FROM collections WHERE collection_id = ?", (document.collection_id,)).fetchone()
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
        " pages, section, embedding, regions) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
                encode_regions_json(chunk.regions),
            )
            for position, chunk in enumerate(chunks)
        ],
    )
    return replaced[0] if replaced else None


def update_document_metadata(
    connection: sqlite3.Connection,
    document_id: str,
    *,
    tags: list[str] | None,
    title: str | None,
    user_metadata: dict[str, MetadataValue] | None,
) -> DocumentRecord | None:
    """Replace what is given of a document's tags, title and user metadata (None: no such document)."""
    row = connection.execute("SELECT * FROM documents WHERE document_id = ?", (document_id,)).fetchone()
    if row is None:
        return None
    if tags is not None:
        connection.execute("UPDATE documents SET tags = ? WHERE document_id = ?", (json.dumps(tags), document_id))
        connection.execute("DELETE FROM document_tags WHERE document_id = ?", (document_id,))
        connection.executemany(
            "INSERT OR IGNORE INTO document_tags(tag, document_id) VALUES (?, ?)",
            [(tag, document_id) for tag in tags],
        )
    if title is not None:
        connection.execute("UPDATE documents SET title = ? WHERE document_id = ?", (title, document_id))
        retitle_chunks(connection, document_id, title)
    if user_metadata is not None:
        connection.execute(
            "UPDATE documents SET user_metadata = ? WHERE document_id = ?",
            (json.dumps(user_metadata), document_id),
        )
        index_user_metadata(connection, document_id, user_metadata)
    return row_to_document(
        connection.execute("SELECT * FROM documents WHERE document_id = ?", (document_id,)).fetchone()
    )


def retitle_chunks(connection: sqlite3.Connection, document_id: str, title: str) -> None:
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
    connection.executemany("INSERT INTO chunk_changes(chunk_rowid) VALUES (?)", [(row["id"],) for row, _ in changed])


def wipe_store(connection: sqlite3.Connection) -> None:
    """Delete every document, chunk, original and pending reindex vector, and forget the model."""
    connection.execute("DELETE FROM originals")
    connection.execute("DELETE FROM documents")
    connection.execute("DELETE FROM chunks")
    connection.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
    connection.execute("DELETE FROM chunk_changes")
    connection.execute("DELETE FROM reindex_vectors")
    connection.execute(
        "DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dimension', 'reindex_model', 'reindex_dimension')"
    )
    # a new epoch: the indexes beside the file start again instead of replaying every delete
    connection.execute("UPDATE meta SET value = ? WHERE key = 'index_epoch'", (uuid.uuid4().hex,))

"""Reading the SQLite store's rows back: the columns a chunk is selected with, rows as records, the
store's embedding identity, and the SQL both search legs filter with."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from carrag.services.models import DocumentRecord, EmbeddingIdentity, SearchFilters, StoredChunk
from carrag.services.stores.sqlite_metadata import add_metadata_filters

CHUNK_COLUMNS = """
    c.id, c.document_id, c.chunk_index, c.text, c.char_start, c.char_end, c.pages, c.section,
    d.filename, d.source_id, d.tags, d.title, d.external_id, d.collection_id
"""


def row_to_chunk(row: sqlite3.Row) -> StoredChunk:
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


def row_to_document(row: sqlite3.Row) -> DocumentRecord:
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


def stored_identity(connection: sqlite3.Connection) -> EmbeddingIdentity | None:
    """The embedding model and dimension recorded by the first write (None: nothing written yet)."""
    rows = dict(
        connection.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')"
        ).fetchall()
    )
    if "embedding_dimension" not in rows:
        return None
    return EmbeddingIdentity(rows.get("embedding_model", ""), int(rows["embedding_dimension"]))


def rows_by_id(connection: sqlite3.Connection, rowids: Sequence[int], vectors: bool = False) -> dict[int, sqlite3.Row]:
    """The chunk rows (`CHUNK_COLUMNS`, and ``embedding`` if ``vectors``) of these rowids, by rowid."""
    if not rowids:
        return {}
    extra = ", c.embedding" if vectors else ""
    rows: dict[int, sqlite3.Row] = {}
    for offset in range(0, len(rowids), 900):
        part = list(rowids[offset : offset + 900])
        marks = ",".join("?" * len(part))
        for row in connection.execute(
            f"SELECT {CHUNK_COLUMNS}{extra} FROM chunks c JOIN documents d ON d.document_id = c.document_id"
            f" WHERE c.id IN ({marks})",
            part,
        ):
            rows[row["id"]] = row
    return rows


def filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
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

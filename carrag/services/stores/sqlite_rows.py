"""The SQLite store's rows as records: the columns a chunk is selected with, rows read back, the store's
embedding identity, and the SQL both search legs filter with. User metadata is kept as JSON in
``documents.user_metadata`` and indexed as one ``key=value`` row per pair in ``document_metadata``,
which the metadata filter matches, as ``document_tags`` does for tags."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from carrag.services.models import DocumentRecord, EmbeddingIdentity, SearchFilters, StoredChunk, metadata_pairs

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


def stored_identity(connection: sqlite3.Connection, prefix: str = "embedding") -> EmbeddingIdentity | None:
    """The embedding model and dimension recorded by the first write (None: nothing written yet); with
    ``prefix="reindex"``, those of an unfinished `carrag reindex` (`sqlite_reindex.py`)."""
    names = (f"{prefix}_model", f"{prefix}_dimension")
    rows = dict(connection.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", names).fetchall())
    if names[1] not in rows:
        return None
    return EmbeddingIdentity(rows.get(names[0], ""), int(rows[names[1]]))


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
    """SQL conditions on ``d`` (documents) for the filters both legs honour (`SearchFilters`)."""
    clauses: list[str] = []
    params: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        params.extend(values)

    def marks(values: Sequence[Any]) -> str:
        return ",".join("?" * len(values))

    if filters.tags:
        add(
            f"d.document_id IN (SELECT document_id FROM document_tags WHERE tag IN ({marks(filters.tags)}))",
            *filters.tags,
        )
    if filters.source is not None:
        add("d.source_id GLOB ?" if filters.source_is_glob else "d.source_id = ?", filters.source)
    if filters.document_ids:
        add(f"d.document_id IN ({marks(filters.document_ids)})", *filters.document_ids)
    if filters.collection_ids:
        add(f"d.collection_id IN ({marks(filters.collection_ids)})", *filters.collection_ids)
    if filters.tag_prefixes:
        # a range on the (tag, document_id) key: UTF-8 order is code point order, so every tag that
        # starts with the prefix sorts between it and the prefix followed by the largest code point
        ranges = " OR ".join("(tag >= ? AND tag < ?)" for _ in filters.tag_prefixes)
        bounds = [bound for prefix in filters.tag_prefixes for bound in (prefix, prefix + chr(0x10FFFF))]
        add(f"d.document_id IN (SELECT document_id FROM document_tags WHERE {ranges})", *bounds)
    for key, value in filters.metadata:
        add("d.document_id IN (SELECT document_id FROM document_metadata WHERE pair = ?)", f"{key}={value}")
    if filters.source_types:
        add(f"d.source_type IN ({marks(filters.source_types)})", *filters.source_types)
    if filters.created_after is not None:
        add("julianday(d.created_at) >= julianday(?)", filters.created_after)
    if filters.created_before is not None:
        add("julianday(d.created_at) < julianday(?)", filters.created_before)
    if filters.filename_glob is not None:
        add("d.filename GLOB ?", filters.filename_glob)
    return " AND ".join(clauses), params


def index_user_metadata(connection: sqlite3.Connection, document_id: str, metadata: dict[str, Any]) -> None:
    connection.execute("DELETE FROM document_metadata WHERE document_id = ?", (document_id,))
    connection.executemany(
        "INSERT OR IGNORE INTO document_metadata(pair, document_id) VALUES (?, ?)",
        [(pair, document_id) for pair in metadata_pairs(metadata)],
    )

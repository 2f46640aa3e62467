"""The SQLite store's user metadata and metadata filters (`SqliteStore`, `sqlite.py`).

User metadata lives in ``documents.user_metadata`` (JSON), apart from the system metadata in
``documents.metadata``; ``document_metadata`` holds one ``key=value`` row per pair (`metadata_pairs`),
which the metadata filter matches, as ``document_tags`` does for tags.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from carrag.services.models import SearchFilters, metadata_pairs

# Columns added after the first release, created on open in a store that lacks them.
ADDED_COLUMNS = {
    "documents": {"user_metadata": "TEXT NOT NULL DEFAULT '{}'"},
    "chunks": {"regions": "TEXT"},  # where a PDF chunk is on its pages (`positions.encode_regions_json`)
}


def add_missing_columns(connection: sqlite3.Connection) -> None:
    for table, columns in ADDED_COLUMNS.items():
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        for name, declaration in columns.items():
            if name not in present:
                connection.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")


def add_metadata_filters(filters: SearchFilters, clauses: list[str], params: list[Any]) -> None:
    """Tag prefixes, user metadata, source types, creation time and file name (`SearchFilters`)."""
    if filters.tag_prefixes:
        # a range on the (tag, document_id) key: UTF-8 order is code point order, so every tag that
        # starts with the prefix sorts between it and the prefix followed by the largest code point
        ranges = " OR ".join("(tag >= ? AND tag < ?)" for _ in filters.tag_prefixes)
        clauses.append(f"d.document_id IN (SELECT document_id FROM document_tags WHERE {ranges})")
        for prefix in filters.tag_prefixes:
            params.extend((prefix, prefix + chr(0x10FFFF)))
    for key, value in filters.metadata:
        clauses.append("d.document_id IN (SELECT document_id FROM document_metadata WHERE pair = ?)")
        params.append(f"{key}={value}")
    if filters.source_types:
        clauses.append(f"d.source_type IN ({','.join('?' * len(filters.source_types))})")
        params.extend(filters.source_types)
    if filters.created_after is not None:
        clauses.append("julianday(d.created_at) >= julianday(?)")
        params.append(filters.created_after)
    if filters.created_before is not None:
        clauses.append("julianday(d.created_at) < julianday(?)")
        params.append(filters.created_before)
    if filters.filename_glob is not None:
        clauses.append("d.filename GLOB ?")
        params.append(filters.filename_glob)


def index_user_metadata(connection: sqlite3.Connection, document_id: str, metadata: dict[str, Any]) -> None:
    connection.execute("DELETE FROM document_metadata WHERE document_id = ?", (document_id,))
    connection.executemany(
        "INSERT OR IGNORE INTO document_metadata(pair, document_id) VALUES (?, ?)",
        [(pair, document_id) for pair in metadata_pairs(metadata)],
    )

"""The SQLite store's library as the API lists it, each a function of the connection inside
`SqliteStore`'s read or write: a page of documents, documents found by a reference (an id prefix, a
source id or a file name), the sources, a document's chunks, and the collections registry."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Sequence
from typing import Any

from carrag.services.errors import Conflict
from carrag.services.models import Collection
from carrag.services.positions import decode_regions
from carrag.services.stores.base import ChunkListing, DocumentPage, DocumentSort, SortOrder, is_glob
from carrag.services.stores.sqlite_rows import CHUNK_COLUMNS, row_to_chunk, row_to_document


def document_page(
    connection: sqlite3.Connection,
    *,
    offset: int,
    limit: int,
    tag: str | None,
    collection_ids: Sequence[str],
    sort: DocumentSort,
    order: SortOrder,
    filename: str | None,
) -> DocumentPage:
    """A page of documents, by ``sort`` then id, with the total that match."""
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
    total = connection.execute(f"SELECT count(*) FROM documents {where}", params).fetchone()[0]
    rows = connection.execute(
        f"SELECT * FROM documents {where} ORDER BY {key} {direction}, document_id LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    return DocumentPage([row_to_document(r) for r in rows], total)


def found_documents(
    connection: sqlite3.Connection, reference: str, *, limit: int, collection_ids: Sequence[str]
) -> DocumentPage:
    """Documents ``reference`` names: an exact id or source id first, then id prefixes and file names."""
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
    return DocumentPage([row_to_document(r) for r in rows], total)


def sources(connection: sqlite3.Connection, collection_ids: Sequence[str]) -> list[tuple[str, str]]:
    """Every (source id, source type), by source id."""
    where = f" WHERE collection_id IN ({','.join('?' * len(collection_ids))})" if collection_ids else ""
    sql = f"SELECT source_id, source_type FROM documents{where} ORDER BY source_id"
    return [(r[0], r[1]) for r in connection.execute(sql, list(collection_ids))]


def chunk_listing(connection: sqlite3.Connection, document_id: str, *, offset: int, limit: int) -> list[ChunkListing]:
    """A document's chunks in order, each with its vector's dimension and its regions (searches do not
    read those)."""
    rows = connection.execute(
        f"SELECT {CHUNK_COLUMNS}, c.regions, length(c.embedding) AS vector_bytes FROM chunks c"
        " JOIN documents d ON d.document_id = c.document_id"
        " WHERE c.document_id = ? ORDER BY c.chunk_index LIMIT ? OFFSET ?",
        (document_id, limit, offset),
    ).fetchall()
    listings = []
    for row in rows:
        chunk = row_to_chunk(row)
        chunk.regions = decode_regions(row["regions"])
        listings.append(ChunkListing(chunk, row["vector_bytes"] // 4))
    return listings


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

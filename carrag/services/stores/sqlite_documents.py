"""The SQLite store's document listings, each built as a function of a read connection: a page of
documents, documents found by a reference (an id prefix, a source id or a file name), the sources,
and a document's chunks."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from carrag.services.positions import decode_regions
from carrag.services.stores.base import ChunkListing, DocumentPage, DocumentSort, SortOrder, is_glob
from carrag.services.stores.sqlite_rows import CHUNK_COLUMNS, row_to_chunk, row_to_document


def document_page_read(
    *,
    offset: int,
    limit: int,
    tag: str | None,
    collection_ids: Sequence[str],
    sort: DocumentSort,
    order: SortOrder,
    filename: str | None,
) -> Callable[[sqlite3.Connection], DocumentPage]:
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

    def page(connection: sqlite3.Connection) -> DocumentPage:
        total = connection.execute(f"SELECT count(*) FROM documents {where}", params).fetchone()[0]
        rows = connection.execute(
            f"SELECT * FROM documents {where} ORDER BY {key} {direction}, document_id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        return DocumentPage([row_to_document(r) for r in rows], total)

    return page


def found_documents_read(
    reference: str, *, limit: int, collection_ids: Sequence[str]
) -> Callable[[sqlite3.Connection], DocumentPage]:
    """Documents ``reference`` names: an exact id or source id first, then id prefixes and file names."""

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
        return DocumentPage([row_to_document(r) for r in rows], total)

    return find


def sources_read(collection_ids: Sequence[str]) -> Callable[[sqlite3.Connection], list[tuple[str, str]]]:
    """Every (source id, source type), by source id."""
    where = f" WHERE collection_id IN ({','.join('?' * len(collection_ids))})" if collection_ids else ""

    def sources(connection: sqlite3.Connection) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in connection.execute(
                f"SELECT source_id, source_type FROM documents{where} ORDER BY source_id", list(collection_ids)
            )
        ]

    return sources


def chunk_listing_read(
    document_id: str, *, offset: int, limit: int
) -> Callable[[sqlite3.Connection], list[ChunkListing]]:
    """A document's chunks in order, each with its vector's dimension and its regions (searches do not
    read those)."""

    def chunks(connection: sqlite3.Connection) -> list[ChunkListing]:
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

    return chunks

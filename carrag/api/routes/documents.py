"""The document API: list, inspect, list chunks, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from carrag.api.deps import StoreDep
from carrag.api.schemas.documents import ChunkOut, ChunkPageOut, DeleteResponse, DocumentOut, DocumentPageOut
from carrag.services.errors import NotFound
from carrag.services.models import DocumentRecord
from carrag.services.stores.base import Store

router = APIRouter(prefix="/documents", tags=["documents"])


def document_out(record: DocumentRecord) -> DocumentOut:
    return DocumentOut(
        document_id=record.document_id,
        filename=record.filename,
        source_id=record.source_id,
        source_type=record.source_type,
        chunk_count=record.chunk_count,
        tags=record.tags,
        metadata=record.metadata,
        content_hash=record.content_hash,
        created_at=record.created_at,
        title=record.title,
        external_id=record.external_id,
    )


async def existing_document(store: Store, document_id: str) -> DocumentRecord:
    record = await store.get_document(document_id)
    if record is None:
        raise NotFound(f"No document with id {document_id}.")
    return record


@router.get("", response_model=DocumentPageOut, summary="List documents (newest first)")
async def list_documents(
    store: StoreDep,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    tag: Annotated[str | None, Query(max_length=200)] = None,
) -> DocumentPageOut:
    page = await store.list_documents(offset=offset, limit=limit, tag=tag.strip().lower() if tag else None)
    return DocumentPageOut(items=[document_out(r) for r in page.items], total=page.total, offset=offset, limit=limit)


@router.get("/{document_id}", response_model=DocumentOut, summary="One document's metadata and chunk count")
async def get_document(store: StoreDep, document_id: str) -> DocumentOut:
    return document_out(await existing_document(store, document_id))


@router.get("/{document_id}/chunks", response_model=ChunkPageOut, summary="A document's chunks, in order")
async def get_chunks(
    store: StoreDep,
    document_id: str,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ChunkPageOut:
    record = await existing_document(store, document_id)
    listings = await store.get_chunks(document_id, offset=offset, limit=limit)
    return ChunkPageOut(
        document_id=document_id,
        items=[
            ChunkOut(
                chunk_index=item.chunk.chunk_index,
                text=item.chunk.text,
                char_start=item.chunk.char_start,
                char_end=item.chunk.char_end,
                pages=item.chunk.pages,
                section=item.chunk.section,
                vector_dimension=item.vector_dimension,
            )
            for item in listings
        ],
        total=record.chunk_count,
        offset=offset,
        limit=limit,
    )


@router.delete("/{document_id}", response_model=DeleteResponse, summary="Delete a document and all its chunks")
async def delete_document(store: StoreDep, document_id: str) -> DeleteResponse:
    if not await store.delete_document(document_id):
        raise NotFound(f"No document with id {document_id}.")
    return DeleteResponse(document_id=document_id, deleted=True)

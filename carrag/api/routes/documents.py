"""The document API: list, inspect, list chunks, download the original, change tags/title, delete
(`carrag/services/documents.py`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from carrag.api.deps import DocumentsDep, PrincipalDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.documents import (
    ChunkPageOut,
    DeletedSourceOut,
    DeleteResponse,
    DocumentOut,
    DocumentPageOut,
    DocumentPatch,
)
from carrag.services.documents import ChunkList, DeletedDocument, DeletedSource, DocumentList
from carrag.services.models import DocumentRecord
from carrag.services.originals import content_disposition
from carrag.services.stores.base import DocumentSort, SortOrder

router = APIRouter(prefix="/documents", tags=["documents"], route_class=JsonBodyRoute)


@router.get("", response_model=DocumentPageOut, summary="List documents (newest first; sort and search by file name)")
async def list_documents(
    documents: DocumentsDep,
    principal: PrincipalDep,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    tag: Annotated[str | None, Query(max_length=200)] = None,
    sort: Annotated[DocumentSort, Query(description="Sort by creation time, file name or chunk count.")] = (
        "created_at"
    ),
    order: Annotated[SortOrder, Query(description="asc or desc (ties: by document id).")] = "desc",
    filename: Annotated[
        str | None,
        Query(
            max_length=500,
            description="File name contains this (case-insensitive), or matches it whole when it is a glob "
            "(`*` `?` `[...]`, e.g. `*.pdf`).",
        ),
    ] = None,
    collection: Annotated[
        list[str] | None,
        Query(max_length=100, description="Only documents of this collection (repeat for several); absent: all."),
    ] = None,
    ref: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=2000,
            description="Resolve a reference instead of listing: an exact id, an id prefix, a source id or a "
            "file name. An exact id or source id wins; otherwise every match, newest first (`offset` and "
            "`tag` do not apply).",
        ),
    ] = None,
) -> DocumentList:
    if ref is not None:
        return await documents.find(ref, limit=limit, collections=collection, principal=principal)
    return await documents.page(
        offset=offset,
        limit=limit,
        tag=tag,
        sort=sort,
        order=order,
        filename=filename,
        collections=collection,
        principal=principal,
    )


@router.get("/{document_id}", response_model=DocumentOut, summary="One document's metadata and chunk count")
async def get_document(documents: DocumentsDep, principal: PrincipalDep, document_id: str) -> DocumentRecord:
    return await documents.get(document_id, principal)


@router.get("/{document_id}/chunks", response_model=ChunkPageOut, summary="A document's chunks, in order")
async def get_chunks(
    documents: DocumentsDep,
    principal: PrincipalDep,
    document_id: str,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ChunkList:
    return await documents.chunks(document_id, offset=offset, limit=limit, principal=principal)


@router.get(
    "/{document_id}/file",
    response_class=StreamingResponse,
    summary="The original file, as uploaded or fetched",
    responses={
        200: {"content": {"application/octet-stream": {}}, "description": "The bytes, with their media type."},
        404: {"description": "No such document, or no original kept for it (the message says which)."},
    },
)
async def get_document_file(documents: DocumentsDep, principal: PrincipalDep, document_id: str) -> StreamingResponse:
    original = await documents.original(document_id, principal)
    return StreamingResponse(
        original.pieces,
        media_type=original.content_type,
        headers={
            "Content-Length": str(original.size),
            # a download, never rendered in the UI's origin (an uploaded HTML page must not run there)
            "Content-Disposition": content_disposition(original.filename),
            "Content-Security-Policy": "sandbox",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.patch(
    "/{document_id}", response_model=DocumentOut, summary="Change a document's tags or title (no re-embedding)"
)
async def patch_document(
    documents: DocumentsDep, principal: PrincipalDep, document_id: str, patch: DocumentPatch
) -> DocumentRecord:
    return await documents.update_metadata(
        document_id, tags=patch.tags, title=patch.title, metadata=patch.metadata, principal=principal
    )


@router.delete("", response_model=DeletedSourceOut, summary="Delete the document stored under a source id")
async def delete_by_source(
    documents: DocumentsDep,
    principal: PrincipalDep,
    source_id: Annotated[str, Query(min_length=1, max_length=2048, description="The exact source id.")],
    collection: Annotated[
        list[str] | None,
        Query(max_length=100, description="In this collection (repeat for several); absent: `default`."),
    ] = None,
) -> DeletedSource:
    return await documents.delete_by_source(source_id, collection, principal)


@router.delete("/{document_id}", response_model=DeleteResponse, summary="Delete a document and all its chunks")
async def delete_document(documents: DocumentsDep, principal: PrincipalDep, document_id: str) -> DeletedDocument:
    return await documents.delete(document_id, principal)

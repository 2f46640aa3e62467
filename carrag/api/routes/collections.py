"""The collection API (knowledge bases): create, list, rename, delete (`carrag/services/collections.py`)."""

from __future__ import annotations

from fastapi import APIRouter

from carrag.api.deps import CollectionsDep
from carrag.api.schemas.collections import (
    CollectionCreate,
    CollectionDeleted,
    CollectionListOut,
    CollectionOut,
    CollectionRename,
)
from carrag.services.models import Collection

router = APIRouter(prefix="/collections", tags=["collections"])


@router.post("", response_model=CollectionOut, status_code=201, summary="Create a collection")
async def create_collection(collections: CollectionsDep, body: CollectionCreate) -> Collection:
    return await collections.create(body.name)


@router.get("", response_model=CollectionListOut, summary="List collections (default included)")
async def list_collections(collections: CollectionsDep) -> CollectionListOut:
    return CollectionListOut.model_validate({"items": await collections.list()})


@router.get("/{name}", response_model=CollectionOut, summary="One collection")
async def get_collection(collections: CollectionsDep, name: str) -> Collection:
    return await collections.get(name)


@router.patch("/{name}", response_model=CollectionOut, summary="Rename a collection (documents keep their ids)")
async def rename_collection(collections: CollectionsDep, name: str, body: CollectionRename) -> Collection:
    return await collections.rename(name, body.name)


@router.delete(
    "/{name}", response_model=CollectionDeleted, summary="Delete a collection with every document and chunk in it"
)
async def delete_collection(collections: CollectionsDep, name: str) -> CollectionDeleted:
    deleted = await collections.delete(name)
    return CollectionDeleted(
        name=deleted.name, collection_id=deleted.collection_id, documents_deleted=deleted.document_count
    )

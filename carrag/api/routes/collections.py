"""The collection API (knowledge bases): create, list, rename, delete (`carrag/services/collections.py`)."""

from __future__ import annotations

from fastapi import APIRouter

from carrag.api.deps import CollectionsDep, PrincipalDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.collections import (
    CollectionCreate,
    CollectionDeleted,
    CollectionListOut,
    CollectionOut,
    CollectionRename,
)
from carrag.services.models import Collection

router = APIRouter(prefix="/collections", tags=["collections"], route_class=JsonBodyRoute)


@router.post("", response_model=CollectionOut, status_code=201, summary="Create a collection")
async def create_collection(collections: CollectionsDep, principal: PrincipalDep, body: CollectionCreate) -> Collection:
    return await collections.create(body.name, principal)


@router.get("", response_model=CollectionListOut, summary="List collections (default included)")
async def list_collections(collections: CollectionsDep, principal: PrincipalDep) -> CollectionListOut:
    return CollectionListOut.model_validate({"items": await collections.list(principal)})


@router.get("/{name}", response_model=CollectionOut, summary="One collection")
async def get_collection(collections: CollectionsDep, principal: PrincipalDep, name: str) -> Collection:
    return await collections.get(name, principal)


@router.patch("/{name}", response_model=CollectionOut, summary="Rename a collection (documents keep their ids)")
async def rename_collection(
    collections: CollectionsDep, principal: PrincipalDep, name: str, body: CollectionRename
) -> Collection:
    return await collections.rename(name, body.name, principal)


@router.delete(
    "/{name}", response_model=CollectionDeleted, summary="Delete a collection with every document and chunk in it"
)
async def delete_collection(collections: CollectionsDep, principal: PrincipalDep, name: str) -> Collection:
    return await collections.delete(name, principal)  # its document_count: those deleted

"""Collections (knowledge bases) on the wire: POST/PATCH bodies, and what GET answers."""

from __future__ import annotations

from pydantic import AliasChoices, Field

from carrag.api.schemas.base import Schema
from carrag.services.collections import NAME_PATTERN

CollectionName = Field(
    ...,
    min_length=1,
    max_length=64,
    pattern=NAME_PATTERN,
    description="1-64 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit.",
    examples=["team-a"],
)


class CollectionCreate(Schema):
    name: str = CollectionName


class CollectionRename(Schema):
    name: str = CollectionName


class CollectionOut(Schema):
    name: str
    collection_id: str = Field(description="Stable: documents keep it when the collection is renamed.")
    created_at: str
    document_count: int


class CollectionListOut(Schema):
    items: list[CollectionOut]


class CollectionDeleted(Schema):
    name: str
    collection_id: str
    deleted: bool = True
    documents_deleted: int = Field(validation_alias=AliasChoices("documents_deleted", "document_count"))

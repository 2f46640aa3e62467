from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, model_validator

from carrag.api.schemas.base import Schema, UserMetadata, UserTags, UserTitle, read_from
from carrag.services.models import MetadataValue


class DocumentOut(Schema):
    document_id: str
    filename: str
    source_id: str
    source_type: str
    chunk_count: int
    tags: list[str]
    metadata: dict[str, MetadataValue] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("user_metadata", "metadata"),
        description="The user's own metadata (ingest `metadata`, PATCH); search filters match it.",
    )
    system_metadata: dict[str, Any] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("system_metadata", "metadata"),
        description="What Carrag recorded (parser, chunking); a PATCH never changes it.",
    )
    content_hash: str
    created_at: str
    title: str | None = None
    external_id: str | None = None
    collection: str | None = Field(
        None,
        validation_alias=AliasChoices("collection", "collection_name"),
        description="The name of the collection (knowledge base) it belongs to.",
    )


class DocumentPatch(Schema):
    """New metadata for a stored document; a field left out stays as it is. No re-embedding."""

    tags: UserTags | None = Field(
        None,
        description="Replace the tags: at most 50 of at most 200 characters (trimmed, lower case, repeats dropped).",
    )
    title: UserTitle | None = Field(None, description="Set the title (at most 1000 characters).")
    metadata: UserMetadata | None = Field(
        None, description="Replace the user metadata: a JSON object of string, number or boolean values."
    )

    @model_validator(mode="after")
    def _something_to_change(self) -> DocumentPatch:
        if self.tags is None and self.title is None and self.metadata is None:
            raise ValueError("give tags, title, metadata or several")
        return self


class DocumentPageOut(Schema):
    items: list[DocumentOut]
    total: int
    offset: int
    limit: int


class RegionOut(Schema):
    """Where part of a PDF chunk is drawn: one line's stretch of it (`carrag.services.positions.Region`)."""

    page: int
    start: int = Field(description="Offset from `char_start` of the first character of the chunk on this line.")
    end: int
    x0: int = Field(description="The rectangle in PDF points from the page's top-left (unrotated), rounded outwards.")
    y0: int
    x1: int
    y1: int


class ChunkOut(Schema):
    chunk_index: int = Field(validation_alias=read_from("chunk", "chunk_index"))
    text: str = Field(validation_alias=read_from("chunk", "text"))
    char_start: int = Field(validation_alias=read_from("chunk", "char_start"))
    char_end: int = Field(validation_alias=read_from("chunk", "char_end"))
    pages: list[int] = Field(validation_alias=read_from("chunk", "pages"))
    section: str | None = Field(None, validation_alias=read_from("chunk", "section"))
    regions: list[RegionOut] = Field(
        default_factory=list,
        validation_alias=read_from("chunk", "regions"),
        description="PDFs: where the chunk is drawn on its pages, one rectangle per line (empty for other formats).",
    )
    vector_dimension: int


class ChunkPageOut(Schema):
    document_id: str
    items: list[ChunkOut]
    total: int
    offset: int
    limit: int


class DeleteResponse(Schema):
    document_id: str
    deleted: bool


class DeletedSourceOut(Schema):
    source_id: str
    deleted: int = Field(description="How many documents were deleted.")
    documents: list[DocumentOut] = Field(description="The deleted documents as they were.")


class ResetRequest(Schema):
    confirm: bool = Field(False, description="Must be true: the reset deletes every document and chunk.")


class ResetResponse(Schema):
    reset: bool
    documents_deleted: int

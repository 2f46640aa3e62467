from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class DocumentOut(BaseModel):
    document_id: str
    filename: str
    source_id: str
    source_type: str
    chunk_count: int
    tags: list[str]
    metadata: dict[str, Any]
    content_hash: str
    created_at: str
    title: str | None = None
    external_id: str | None = None


class DocumentPageOut(BaseModel):
    items: list[DocumentOut]
    total: int
    offset: int
    limit: int


class ChunkOut(BaseModel):
    chunk_index: int
    text: str
    char_start: int
    char_end: int
    pages: list[int]
    section: str | None = None
    vector_dimension: int


class ChunkPageOut(BaseModel):
    document_id: str
    items: list[ChunkOut]
    total: int
    offset: int
    limit: int


class DeleteResponse(BaseModel):
    document_id: str
    deleted: bool

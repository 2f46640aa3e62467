"""POST /ingest/file and POST /ingest/url: validate, hand to the ingestion service, answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile

from api.deps import IngestionDep, SettingsDep
from api.schemas.ingest import ChunkingStrategy, IngestResponse, IngestUrlRequest
from services.errors import EmptyDocument, InvalidInput, PayloadTooLarge
from services.ingestion import IngestOptions
from services.parsers import check_supported

router = APIRouter(prefix="/ingest", tags=["ingest"])


def split_tags(raw: str | None) -> list[str]:
    return [tag.strip() for tag in (raw or "").split(",") if tag.strip()]


@router.post("/file", response_model=IngestResponse, summary="Upload and ingest a file")
async def ingest_file(
    ingestion: IngestionDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="The document (.pdf, .txt, .md, ...)")],
    tags: Annotated[str | None, Form(description="Comma-separated tags")] = None,
    source_id: Annotated[str | None, Form(max_length=2048)] = None,
    chunking: Annotated[ChunkingStrategy | None, Form()] = None,
    chunk_size: Annotated[int | None, Form(ge=50, le=20000)] = None,
    chunk_overlap: Annotated[int | None, Form(ge=0, le=10000)] = None,
    force: Annotated[bool, Form()] = False,
) -> IngestResponse:
    filename = (file.filename or "").strip()
    if not filename:
        raise InvalidInput("The uploaded file has no filename; the extension decides how it is parsed.")
    check_supported(filename)
    data = await file.read(settings.max_upload_bytes + 1)
    if len(data) > settings.max_upload_bytes:
        raise PayloadTooLarge(f"{filename} is larger than {settings.max_upload_bytes} bytes (MAX_UPLOAD_BYTES).")
    if not data:
        raise EmptyDocument(f"{filename} is empty.")
    options = IngestOptions(
        tags=split_tags(tags), source_id=source_id, chunking=chunking,
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, force=force,
    )
    async with ingestion.slot():
        result = await ingestion.ingest_file(data, filename, options)
    return IngestResponse(**result.as_dict())


@router.post("/url", response_model=IngestResponse, summary="Fetch a web page and ingest it")
async def ingest_url(ingestion: IngestionDep, body: IngestUrlRequest) -> IngestResponse:
    options = IngestOptions(
        tags=body.tags, source_id=body.source_id, chunking=body.chunking,
        chunk_size=body.chunk_size, chunk_overlap=body.chunk_overlap, force=body.force,
    )
    async with ingestion.slot():
        result = await ingestion.ingest_url(body.url.strip(), options)
    return IngestResponse(**result.as_dict())

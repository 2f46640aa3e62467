"""POST /ingest/file and POST /ingest/url: validate, hand to the ingestion service, answer.

With ``?async=true`` the validated input becomes an ingest job instead (`carrag/services/jobs/`): the
answer is 202 with the job id at once; GET /jobs/{id} follows it.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from carrag.api.deps import (
    CollectionsDep,
    ContainerDep,
    IngestionDep,
    JobsDep,
    PrincipalDep,
    RequestsDep,
    SettingsDep,
)
from carrag.api.json_body import JsonBodyRoute
from carrag.api.routes.jobs import status_url
from carrag.api.schemas.base import UserMetadata
from carrag.api.schemas.ingest import IngestResponse, IngestUrlRequest
from carrag.api.schemas.jobs import JobAccepted
from carrag.services.errors import EmptyDocument, InvalidInput, PayloadTooLarge
from carrag.services.ingestion import IngestResult
from carrag.services.jobs import Job
from carrag.services.parsers import check_supported
from carrag.services.requests import display_filename, split_tags
from carrag.services.sync.crawl import CrawlLimits
from carrag.services.vocabulary import ChunkingStrategy, JobState

router = APIRouter(prefix="/ingest", tags=["ingest"], route_class=JsonBodyRoute)


AsyncFlag = Annotated[
    bool, Query(alias="async", description="Queue as a job and answer 202 at once; follow it at GET /jobs/{id}.")
]
ASYNC_RESPONSES: dict[int | str, dict[str, object]] = {
    202: {"model": JobAccepted, "description": "With ?async=true: queued as an ingest job."}
}


def form_metadata(raw: str | None) -> dict[str, Any]:
    """The ``metadata`` form field (JSON text) as a checked dict; 422 when it is not an object of scalars."""
    if raw is None or not raw.strip():
        return {}
    try:
        return TypeAdapter(UserMetadata).validate_json(raw)
    except ValidationError as exc:
        errors = [{**error, "loc": ("body", "metadata", *error["loc"])} for error in exc.errors(include_url=False)]
        raise RequestValidationError(jsonable_encoder(errors)) from None


def accepted(job: Job) -> JSONResponse:
    body = JobAccepted(job_id=job.job_id, state=JobState.QUEUED, status_url=status_url(job))
    return JSONResponse(body.model_dump(mode="json"), status_code=202, headers={"Location": body.status_url})


@router.post("/file", response_model=IngestResponse, summary="Upload and ingest a file", responses=ASYNC_RESPONSES)
async def ingest_file(
    request: Request,
    ingestion: IngestionDep,
    requests: RequestsDep,
    settings: SettingsDep,
    jobs: JobsDep,
    principal: PrincipalDep,
    collections: CollectionsDep,
    file: Annotated[UploadFile, File(description="The document (.pdf, .txt, .md, ...)")],
    tags: Annotated[str | None, Form(description="Comma-separated tags: at most 50 of at most 200 characters.")] = None,
    source_id: Annotated[str | None, Form(max_length=2048)] = None,
    chunking: Annotated[ChunkingStrategy | None, Form()] = None,
    chunk_size: Annotated[int | None, Form(ge=50, le=20000)] = None,
    chunk_overlap: Annotated[int | None, Form(ge=0, le=10000)] = None,
    force: Annotated[
        bool, Form(description="Re-ingest even when this source id already holds the same content.")
    ] = False,
    metadata: Annotated[
        str | None,
        Form(max_length=100_000, description='User metadata as JSON text: an object of scalar values, {"team": "a"}'),
    ] = None,
    collection: Annotated[
        str | None, Form(max_length=64, description="The collection to ingest into (default: `default`).")
    ] = None,
    run_async: AsyncFlag = False,
) -> IngestResult | JSONResponse:
    repeated = [
        name for name, count in Counter(key for key, _ in (await request.form()).multi_items()).items() if count > 1
    ]
    if repeated:
        raise InvalidInput(f"The form repeats {', '.join(repeated)}: send each field once (one file per request).")
    filename = display_filename(file.filename)
    check_supported(filename)
    data = await file.read(settings.max_upload_bytes + 1)
    if len(data) > settings.max_upload_bytes:
        raise PayloadTooLarge(f"{filename} is larger than {settings.max_upload_bytes} bytes (MAX_UPLOAD_BYTES).")
    if not data:
        raise EmptyDocument(f"{filename} is empty.")
    options = requests.ingest(
        tags=split_tags(tags),
        source_id=source_id,
        chunking=chunking,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        force=force,
        metadata=form_metadata(metadata),
        principal=principal,
        collection=collection,
    )
    await collections.resolve(options.collections)  # an unknown collection is 404 now, not a failed job
    if run_async:
        return accepted(await jobs.submit_file(data, filename, options))
    return await ingestion.ingest_file(data, filename, options)


@router.post(
    "/url",
    response_model=IngestResponse,
    summary="Fetch a web page and ingest it, or crawl a site",
    responses={
        **ASYNC_RESPONSES,
        202: {"model": JobAccepted, "description": "With ?async=true, or with `crawl`: queued as a job."},
        409: {"description": "With `crawl`: a crawl of this site into this collection is running."},
    },
)
async def ingest_url(
    container: ContainerDep,
    ingestion: IngestionDep,
    requests: RequestsDep,
    jobs: JobsDep,
    principal: PrincipalDep,
    collections: CollectionsDep,
    body: IngestUrlRequest,
    run_async: AsyncFlag = False,
) -> IngestResult | JSONResponse:
    options = requests.ingest(**body.model_dump(exclude={"url", "crawl"}), principal=principal)
    await collections.resolve(options.collections)
    if body.crawl is not None:
        if body.source_id:
            raise InvalidInput("A crawl names each page's document by its URL; leave source_id out.")
        limits = CrawlLimits(body.crawl.max_pages, body.crawl.max_depth, body.crawl.same_prefix)
        return accepted(await container.sync.crawl(body.url.strip(), options, limits))
    if run_async:
        return accepted(await jobs.submit_url(body.url.strip(), options))
    return await ingestion.ingest_url(body.url.strip(), options)

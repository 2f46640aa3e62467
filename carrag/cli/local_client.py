"""`LocalClient`: the `CarragClient` interface on the configured store in this process (the same
composition root the server uses, `carrag.services.container.build_container`), for use without a server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

from carrag.api.errors import status_for
from carrag.api.schemas.collections import CollectionDeleted, CollectionListOut, CollectionOut
from carrag.api.schemas.documents import (
    ChunkPageOut,
    DeletedSourceOut,
    DeleteResponse,
    DocumentOut,
    DocumentPageOut,
    ResetResponse,
)
from carrag.api.schemas.health import HealthOut
from carrag.api.schemas.ingest import IngestResponse
from carrag.api.schemas.jobs import JobListOut, JobOut
from carrag.api.schemas.query import QueryRequest, SearchRequest, SearchResponse, stream_payload
from carrag.cli.client import (
    JOB_POLL_SECONDS,
    ClientError,
    DocumentListing,
    IngestSettings,
    OpenDestination,
    ProgressCallback,
    StreamEvent,
    SyncProgress,
    SyncTarget,
)
from carrag.services.errors import CarragError, Conflict, PayloadTooLarge
from carrag.services.settings import Settings


class _ObserverAdapter:
    """Turns the ingestion service's observer calls into the jobs API's (state, done, total)."""

    def __init__(self, on_progress: ProgressCallback) -> None:
        self.on_progress = on_progress
        self.state = "queued"

    def stage(self, stage: str) -> None:
        self.state = stage
        self.on_progress(stage, 0, 0)

    def embedded(self, done: int, total: int) -> None:
        self.on_progress(self.state, done, total)

    def ocr_read(self, done: int, total: int) -> None:
        self.on_progress(self.state, done, total)


class LocalClient:
    """Works on the configured store directly; models load on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._container: Any = None

    async def container(self) -> Any:
        if self._container is None:
            from carrag.services.container import build_container

            self._container = await build_container(self.settings)
        return self._container

    @contextlib.asynccontextmanager
    async def _using(self) -> AsyncIterator[Any]:
        """The container, with a service error raised as the `ClientError` the API's status would carry."""
        try:
            yield await self.container()
        except CarragError as error:
            raise ClientError(error.message, status_for(error)) from error

    async def ingest_file(
        self, path: Path, source_id: str, options: IngestSettings, on_progress: ProgressCallback
    ) -> IngestResponse:
        async with self._using() as container:
            limit = container.settings.max_upload_bytes
            if path.stat().st_size > limit:
                raise PayloadTooLarge(f"{path} is larger than {limit} bytes (MAX_UPLOAD_BYTES).")
            data = await asyncio.to_thread(path.read_bytes)
            result = await container.ingestion.ingest_file(
                data, path.name, options.command(container.requests, source_id), _ObserverAdapter(on_progress)
            )
            return IngestResponse.model_validate(result)

    async def ingest_url(self, url: str, options: IngestSettings, on_progress: ProgressCallback) -> IngestResponse:
        async with self._using() as container:
            result = await container.ingestion.ingest_url(
                url, options.command(container.requests), _ObserverAdapter(on_progress)
            )
            return IngestResponse.model_validate(result)

    async def sync(self, target: SyncTarget, options: IngestSettings, on_progress: SyncProgress) -> JobOut:
        """The sync runs as a job of this process's job manager: the same one-at-a-time claim as a server's,
        so a server's sync of the same folder on a shared Elasticsearch store is refused, and vice versa."""
        async with self._using() as container:
            command = options.command(container.requests)
            if target.crawl is not None:
                job = await container.sync.crawl(target.source, command, target.crawl)
            else:
                job = await container.sync.sync_folder(target.source, command, target.globs)
            task = job.task
            try:
                while not job.finished:
                    on_progress(JobOut.model_validate(job))
                    await asyncio.sleep(JOB_POLL_SECONDS)
                if task is not None:
                    await task  # its final record is written: a sync started right after is not refused
            except asyncio.CancelledError:
                with contextlib.suppress(Conflict):  # finished meanwhile
                    await asyncio.shield(container.jobs.cancel(job.job_id))
                raise
            return JobOut.model_validate(job)

    async def list_documents(self, listing: DocumentListing) -> DocumentPageOut:
        async with self._using() as container:
            page = await container.documents.page(
                offset=listing.offset,
                limit=listing.limit,
                tag=listing.tag,
                sort=listing.sort,
                order=listing.order,
                filename=listing.filename,
                collections=[listing.collection] if listing.collection else None,
            )
            return DocumentPageOut.model_validate(page)

    async def get_document(self, document_id: str) -> DocumentOut:
        async with self._using() as container:
            return DocumentOut.model_validate(await container.documents.get(document_id))

    async def find_documents(
        self, reference: str, *, limit: int = 10, collection: str | None = None
    ) -> DocumentPageOut:
        async with self._using() as container:
            found = await container.documents.find(
                reference, limit=limit, collections=[collection] if collection else None
            )
            return DocumentPageOut.model_validate(found)

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 100) -> ChunkPageOut:
        async with self._using() as container:
            return ChunkPageOut.model_validate(
                await container.documents.chunks(document_id, offset=offset, limit=limit)
            )

    async def delete_document(self, document_id: str) -> DeleteResponse:
        async with self._using() as container:
            return DeleteResponse.model_validate(await container.documents.delete(document_id))

    async def delete_by_source(self, source_id: str, collection: str | None = None) -> DeletedSourceOut:
        async with self._using() as container:
            deleted = await container.documents.delete_by_source(source_id, [collection] if collection else None)
            return DeletedSourceOut.model_validate(deleted)

    async def reset(self) -> ResetResponse:
        async with self._using() as container:
            return ResetResponse.model_validate(await container.documents.reset())

    async def health(self) -> HealthOut:
        from carrag.api.routes.health import health_report

        async with self._using() as container:
            return health_report(await container.health(), container.settings)

    async def list_jobs(self, *, limit: int = 50) -> JobListOut:
        """The jobs recorded in the store (servers' async ingests; local ingests run without jobs)."""
        async with self._using() as container:
            return JobListOut.model_validate(
                {"items": await container.jobs.recent(limit), "total": await container.jobs.total()}
            )

    async def search(self, request: SearchRequest) -> SearchResponse:
        async with self._using() as container:
            return SearchResponse.model_validate(await container.search.search(request.to_query(container.requests)))

    async def stream_query(self, request: QueryRequest) -> AsyncGenerator[StreamEvent]:
        async with self._using() as container:
            events = container.answers.stream_answer(request.to_query(container.requests))
            try:
                async for event in events:
                    yield (event.kind, stream_payload(event.kind, event.data))
            finally:
                await events.aclose()

    async def download_original(self, document_id: str, open_destination: OpenDestination) -> tuple[str, int]:
        """Write a document's kept original to ``open_destination(its file name)``; (file name, bytes)."""
        async with self._using() as container:
            original = await container.documents.original(document_id)
            destination = open_destination(original.filename)
            async for piece in original.pieces:
                destination.write(piece)
            return original.filename, original.size

    async def list_collections(self) -> CollectionListOut:
        async with self._using() as container:
            return CollectionListOut.model_validate({"items": await container.collections.list()})

    async def create_collection(self, name: str) -> CollectionOut:
        async with self._using() as container:
            return CollectionOut.model_validate(await container.collections.create(name))

    async def rename_collection(self, name: str, new_name: str) -> CollectionOut:
        async with self._using() as container:
            return CollectionOut.model_validate(await container.collections.rename(name, new_name))

    async def delete_collection(self, name: str) -> CollectionDeleted:
        async with self._using() as container:
            return CollectionDeleted.model_validate(await container.collections.delete(name))

    async def aclose(self) -> None:
        if self._container is not None:
            await self._container.aclose()
            self._container = None

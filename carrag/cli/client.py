"""The client interface the CLI commands share: `LocalClient` (`local_client.py`, the store in this
process) and `HttpClient` (`http_client.py`, a running server). Both return the API's wire types and
raise `ClientError` with the HTTP status the API would answer, so every command is written once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

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
from carrag.api.schemas.query import QueryRequest, SearchRequest, SearchResponse, StreamPayload
from carrag.services.requests import IngestCommand, RequestFactory
from carrag.services.stores.base import DocumentSort, SortOrder
from carrag.services.sync.crawl import CrawlLimits
from carrag.services.vocabulary import ChunkingStrategy

# (state, done, total): "parsing", "embedding" 32/120, ... as the jobs API reports them.
ProgressCallback = Callable[[str, int, int], None]
# ("sources", [Source]) | ("token", StreamToken) | ("done", StreamDone) | ("error", StreamError)
StreamEvent = tuple[str, StreamPayload]
# `download_original`: the original's file name → where its bytes go
OpenDestination = Callable[[str], BinaryIO]
# `sync`: the job as it stands, at each look (its progress and the report so far)
SyncProgress = Callable[[JobOut], None]
JOB_POLL_SECONDS = 0.25


class ClientError(Exception):
    """``status`` is the HTTP status (or the one the API would answer with); ``fatal`` marks failures
    every later request would repeat: an unreachable server, a missing or refused API key."""

    def __init__(self, detail: str, status: int | None = None, *, fatal: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.fatal = fatal


@dataclass(slots=True)
class IngestSettings:
    """What the user chose for every source of one ``carrag ingest`` run."""

    tags: list[str] = field(default_factory=list)
    chunking: ChunkingStrategy | None = None
    force: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    collection: str | None = None  # None: default

    def command(self, requests: RequestFactory, source_id: str | None = None) -> IngestCommand:
        """These choices as one source's validated ingest (in-process)."""
        return requests.ingest(
            tags=self.tags,
            source_id=source_id,
            chunking=self.chunking,
            force=self.force,
            metadata=self.metadata,
            collection=self.collection,
        )


@dataclass(frozen=True, slots=True)
class SyncTarget:
    """What `carrag sync` follows: a folder (an absolute path, as the machine syncing it sees it) with
    optional globs, or a site (``crawl``: how far to crawl it)."""

    source: str
    globs: tuple[str, ...] = ()
    crawl: CrawlLimits | None = None


@dataclass(frozen=True, slots=True)
class DocumentListing:
    """Which page of documents `list_documents` returns: GET /documents' query parameters (``filename``:
    a case-insensitive substring, or a glob matched whole; ``collection``: None for every collection)."""

    offset: int = 0
    limit: int = 50
    tag: str | None = None
    collection: str | None = None
    sort: DocumentSort = "created_at"
    order: SortOrder = "desc"
    filename: str | None = None


class CarragClient(Protocol):
    async def ingest_file(
        self, path: Path, source_id: str, options: IngestSettings, on_progress: ProgressCallback
    ) -> IngestResponse: ...

    async def ingest_url(self, url: str, options: IngestSettings, on_progress: ProgressCallback) -> IngestResponse: ...

    async def sync(self, target: SyncTarget, options: IngestSettings, on_progress: SyncProgress) -> JobOut:
        """Run a sync or crawl job to its end (cancelled if the caller is); the finished job."""
        ...

    async def list_documents(self, listing: DocumentListing) -> DocumentPageOut: ...

    async def get_document(self, document_id: str) -> DocumentOut: ...

    async def find_documents(
        self, reference: str, *, limit: int = 10, collection: str | None = None
    ) -> DocumentPageOut: ...

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 100) -> ChunkPageOut: ...

    async def delete_document(self, document_id: str) -> DeleteResponse: ...

    async def delete_by_source(self, source_id: str, collection: str | None = None) -> DeletedSourceOut: ...

    async def reset(self) -> ResetResponse: ...

    async def download_original(self, document_id: str, open_destination: OpenDestination) -> tuple[str, int]: ...
    async def health(self) -> HealthOut: ...

    async def list_jobs(self, *, limit: int = 50) -> JobListOut: ...

    async def search(self, request: SearchRequest) -> SearchResponse: ...

    def stream_query(self, request: QueryRequest) -> AsyncGenerator[StreamEvent]: ...

    async def list_collections(self) -> CollectionListOut: ...

    async def create_collection(self, name: str) -> CollectionOut: ...

    async def rename_collection(self, name: str, new_name: str) -> CollectionOut: ...

    async def delete_collection(self, name: str) -> CollectionDeleted: ...

    async def aclose(self) -> None: ...


async def all_documents(client: CarragClient, page_size: int = 500, collection: str | None = None) -> list[DocumentOut]:
    documents: list[DocumentOut] = []
    while True:
        page = await client.list_documents(
            DocumentListing(offset=len(documents), limit=page_size, collection=collection)
        )
        documents.extend(page.items)
        if not page.items or len(documents) >= page.total:
            return documents

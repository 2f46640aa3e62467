"""What the CLI's two clients share: `LocalClient` (`local_client.py`, the store in this process) and
`HttpClient` (`http_client.py`, a running server), both raising `ClientError` with the HTTP status the
API would answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from carrag.api.schemas.jobs import JobOut
from carrag.api.schemas.query import StreamPayload
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

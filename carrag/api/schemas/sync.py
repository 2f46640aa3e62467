"""POST /sync and the report a sync or crawl job carries (``GET /jobs/{id}``: ``report``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from carrag.api.schemas.base import Schema, UserMetadata
from carrag.services.vocabulary import ChunkingStrategy, SyncOutcome


class SyncRequest(Schema):
    path: str = Field(
        ...,
        min_length=1,
        max_length=4096,
        description="The folder, as an absolute path on the server's machine, under a directory named in SYNC_ROOTS.",
        examples=["/srv/knowledge/handbook"],
    )
    globs: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list,
        max_length=50,
        description="Only files matching any of these: a pattern without `/` matches file names at any depth "
        "(`*.md`), one with `/` the path under the folder (`guides/**/*.pdf`). None: every supported file.",
    )
    collection: str | None = Field(None, max_length=64, description="The collection to sync into (default: `default`).")
    tags: list[str] = Field(default_factory=list, max_length=50, description="Tags for every document of the folder.")
    metadata: UserMetadata = Field(default_factory=dict, description="User metadata for every document of the folder.")
    chunking: ChunkingStrategy | None = None
    chunk_size: int | None = Field(None, ge=50, le=20000)
    chunk_overlap: int | None = Field(None, ge=0, le=10000)


class SourceReportOut(Schema):
    source: str = Field(description="The file's path under the folder, or the page's URL.")
    outcome: SyncOutcome
    document_id: str | None = None
    detail: str | None = Field(None, description="Why it failed, was skipped or was deleted.")


class SyncReportOut(Schema):
    root: str = Field(description="The folder (symlinks resolved), or the URL prefix a crawl stays under.")
    counts: dict[str, int] = Field(
        description="Sources per outcome: added, updated, unchanged, deleted, skipped, failed (exact)."
    )
    sources: list[SourceReportOut] = Field(
        description="Each source added, updated, deleted, skipped or failed, in the order they were done "
        "(unchanged ones are only counted), at most 250."
    )
    unlisted: int = Field(0, description="Sources counted but beyond the 250 listed.")
    note: str | None = Field(None, description="E.g. why documents of sources not found were kept.")

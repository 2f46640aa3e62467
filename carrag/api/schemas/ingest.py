from __future__ import annotations

from pydantic import Field

from carrag.api.schemas.base import Schema, UserMetadata, UserTags
from carrag.services.vocabulary import ChunkingStrategy, IngestStatus


class CrawlOptions(Schema):
    """Crawl the site from the URL instead of ingesting one page (always a job: the answer is 202)."""

    max_pages: int = Field(100, ge=1, description="Pages fetched at most (up to CRAWL_MAX_PAGES).")
    max_depth: int = Field(3, ge=0, le=50, description="Links followed from the start page (and sitemap pages).")
    same_prefix: bool = Field(
        True,
        description="Stay under the start URL's directory (`https://site/docs/` for `https://site/docs/intro`); "
        "false: anywhere on its host.",
    )


class IngestUrlRequest(Schema):
    url: str = Field(..., min_length=1, max_length=2048, examples=["https://example.com/article"])
    tags: UserTags = Field(
        default_factory=list, description="At most 50 tags of at most 200 characters (trimmed, lower case)."
    )
    source_id: str | None = Field(None, max_length=2048, description="Defaults to the URL.")
    chunking: ChunkingStrategy | None = None
    chunk_size: int | None = Field(None, ge=50, le=20000)
    chunk_overlap: int | None = Field(None, ge=0, le=10000)
    force: bool = Field(False, description="Re-ingest even when this source id already holds the same content.")
    metadata: UserMetadata = Field(
        default_factory=dict, description="The user's own metadata: a JSON object of string, number or boolean values."
    )
    collection: str | None = Field(
        None, max_length=64, description="The collection (knowledge base) to ingest into; absent: `default`."
    )
    crawl: CrawlOptions | None = Field(
        None,
        description="Crawl the site: follow links within its prefix, read its sitemap, honour robots.txt; "
        "crawling again updates only what changed and deletes the pages gone. Answered 202 with a job.",
    )


class IngestResponse(Schema):
    document_id: str
    filename: str
    chunk_count: int
    tags: list[str] = Field(description="Generated tags first, then the caller's; trimmed, lower case.")
    status: IngestStatus = Field(
        description="`unchanged`: this source id already holds the same content; nothing was re-embedded. "
        "`updated`: the same content with tags or metadata it did not have; they were added in place, nothing "
        "re-embedded. "
        "`duplicate`: another source id already holds the same text (ALLOW_DUPLICATES is off); nothing was "
        "stored and `document_id`/`source_id` name that document."
    )
    source_id: str
    replaced_document_id: str | None = Field(None, description="The earlier version of this source, now replaced.")
    timings_ms: dict[str, float] = Field(default_factory=dict, description="Milliseconds spent in each stage.")
    collection: str = Field("default", description="The collection the document is in.")

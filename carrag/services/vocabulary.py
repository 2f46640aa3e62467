"""The words Carrag's requests and answers are made of, defined once as ``StrEnum``s (a member equals its
string value, so JSON, environment variables and comparisons work unchanged).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class ChunkingStrategy(StrEnum):
    """How a document's text is split (`carrag/services/chunking`)."""

    RECURSIVE = "recursive"
    FIXED = "fixed"
    PARAGRAPH = "paragraph"
    SENTENCE = "sentence"
    MARKDOWN = "markdown"
    CODE = "code"  # source files (.py, .js, .ts, .yaml, .toml, .sql)


class SearchMode(StrEnum):
    """Which retrieval legs a search runs: both, fused (hybrid), or one of them."""

    HYBRID = "hybrid"
    BM25 = "bm25"
    KNN = "knn"


class JobState(StrEnum):
    """An ingest's state: the pipeline's stages in order, then how it ended (a sync or crawl job is
    ``running`` between the two)."""

    QUEUED = "queued"
    RUNNING = "running"
    PARSING = "parsing"
    TAGGING = "tagging"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXING = "indexing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_JOB_STATES = frozenset({JobState.DONE, JobState.FAILED, JobState.CANCELLED})


class JobKind(StrEnum):
    FILE = "file"
    URL = "url"
    SYNC = "sync"  # a folder kept in sync (`carrag/services/sync/`)
    CRAWL = "crawl"  # a site crawled


class SyncOutcome(StrEnum):
    """What a sync or crawl did with one source."""

    ADDED = "added"
    UPDATED = "updated"  # its content changed: re-ingested
    UNCHANGED = "unchanged"  # nothing parsed or embedded
    DELETED = "deleted"  # its file or page is gone: the document this sync made of it was deleted
    SKIPPED = "skipped"  # not ingested, not an error: a copy of another source, held by another, robots.txt
    FAILED = "failed"


class IngestStatus(StrEnum):
    INGESTED = "ingested"
    UNCHANGED = "unchanged"  # this source id already holds the same content: nothing re-embedded
    UPDATED = "updated"  # the same content with new tags: added to the stored document in place, nothing re-embedded
    DUPLICATE = "duplicate"  # another source id holds the same text (ALLOW_DUPLICATES off): nothing stored


class PdfMode(StrEnum):
    TEXT = "text"
    MARKDOWN = "markdown"


HealthStatus = Literal["ok", "off", "degraded", "unavailable"]
"""A component's state in /health (every adapter reports one); ``off``: left out by configuration
(`RERANK_ENABLED=auto` without an installed model), which does not make the service degraded."""

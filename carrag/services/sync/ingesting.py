"""What folder sync and crawl share when they hand a source to the ingestion service: waiting out a full
ingest queue, reading the result as a sync outcome, and running sources a few at a time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from carrag.services.errors import Overloaded
from carrag.services.ingestion import IngestionService, IngestResult
from carrag.services.models import DocumentRecord
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.stores.base import Store
from carrag.services.sync.ownership import Holdings
from carrag.services.sync.report import SyncReport
from carrag.services.vocabulary import IngestStatus, SyncOutcome

T = TypeVar("T")
Progress = Callable[[int, int], None]  # (sources done, sources known)

ADMISSION_WAIT_SECONDS = 120.0  # a sync waits this long for a free ingest slot before that source fails


@dataclass
class SourceSync:
    """One run of a sync over its source: ``report`` fills as it goes; ``progress`` hears (done, known)."""

    settings: Settings
    store: Store
    ingestion: IngestionService
    command: IngestCommand
    collection_id: str
    report: SyncReport
    progress: Progress
    held: Holdings = field(init=False, default_factory=Holdings)
    done: int = field(init=False, default=0)


async def admitted(ingest: Callable[[], Awaitable[T]]) -> T:
    """Run ``ingest``, waiting while the ingestion queue is full (429 to the sync, which is no reason to
    fail a source: other clients' ingests will finish)."""
    deadline = time.monotonic() + ADMISSION_WAIT_SECONDS
    delay = 0.1
    while True:
        try:
            return await ingest()
        except Overloaded:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)


def outcome_of(result: IngestResult, existing: DocumentRecord | None) -> tuple[SyncOutcome, str | None]:
    """How a sync reports an ingest's result (``existing``: the source's document before it)."""
    if result.status == IngestStatus.DUPLICATE:
        return SyncOutcome.SKIPPED, f"the same text as {result.source_id}, which is stored already"
    if result.status == IngestStatus.INGESTED:
        replaced = existing is not None or result.replaced_document_id is not None
        return (SyncOutcome.UPDATED if replaced else SyncOutcome.ADDED), None
    return SyncOutcome.UNCHANGED, None  # the same text: nothing re-embedded (new validators recorded in place)


async def for_each(items: Iterable[T], work: Callable[[T], Awaitable[None]], concurrency: int) -> None:
    """``work`` on every item, at most ``concurrency`` at a time (each item taken once, roughly in order)."""
    iterator = iter(items)

    async def worker() -> None:
        for item in iterator:
            await work(item)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, concurrency)):
            group.create_task(worker())

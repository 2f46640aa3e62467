"""Bulk ingestion (`IngestionService.ingest_many`): each document goes through the whole pipeline and is
written in its own atomic step; only the embedding calls are shared (`embedders/coalescing.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from carrag.services.embedders.coalescing import CoalescingEmbedder
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import CarragError
from carrag.services.requests import IngestCommand

DocumentEmbedder = Callable[..., Awaitable[np.ndarray]]  # (texts, progress=...) -> vectors
Result = TypeVar("Result")  # what ingesting one document gives (`IngestResult`)


@dataclass(slots=True)
class BulkDocument:
    """One document for `IngestionService.ingest_many`: extracted ``text``, or a file's ``data``."""

    filename: str
    options: IngestCommand = field(default_factory=IngestCommand)
    text: str | None = None
    data: bytes | None = None


async def ingest_together(
    documents: Iterable[BulkDocument],
    ingest_one: Callable[[BulkDocument, DocumentEmbedder], Awaitable[Result]],
    embedder: EmbeddingService,
    *,
    texts_per_call: int,
    concurrency: int,
    on_result: Callable[[int, Result | CarragError], None] | None = None,
) -> list[Result | CarragError]:
    """``ingest_one`` for every document, ``concurrency`` at a time, all embedding through one coalescing
    embedder (calls of up to ``texts_per_call`` texts). A document that fails gets its error in the result
    list (input order); the others go on."""
    items = list(documents)
    results: list[Result | CarragError | None] = [None] * len(items)
    coalescer = CoalescingEmbedder(embedder, max_texts=texts_per_call)
    gate = asyncio.Semaphore(concurrency)

    async def one(position: int, item: BulkDocument) -> None:
        async with gate:
            try:
                result: Result | CarragError = await ingest_one(item, coalescer.embed_documents)
            except CarragError as exc:
                result = exc
        results[position] = result
        if on_result is not None:
            on_result(position, result)

    try:
        async with asyncio.TaskGroup() as group:
            for position, item in enumerate(items):
                group.create_task(one(position, item))
    finally:
        await coalescer.aclose()
    return [result for result in results if result is not None]

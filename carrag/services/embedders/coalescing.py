"""Dynamic batching across callers: many small ``embed_documents`` calls become a few big ones.

The model runs far below its throughput on tiny batches, so in a bulk ingest the chunk texts that
arrive while one batch is embedded queue up and go out together as the next, sorted by length so each
run pads little. Every caller gets its own vectors in its own order, or its batch's exception.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from carrag.services.embedders.service import EmbeddingService, ProgressCallback


@dataclass(slots=True)
class _Request:
    texts: Sequence[str]
    future: asyncio.Future[np.ndarray]
    progress: ProgressCallback | None = None


@dataclass(slots=True)
class CoalescingEmbedder:
    embedder: EmbeddingService
    max_texts: int = 512  # texts per coalesced call; requests are never split
    _pending: list[_Request] = field(default_factory=list)
    _worker: asyncio.Task[None] | None = None

    async def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._pending.append(_Request(list(texts), future, progress))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    def _take_batch(self) -> list[_Request]:
        batch: list[_Request] = []
        count = 0
        while self._pending and (not batch or count + len(self._pending[0].texts) <= self.max_texts):
            request = self._pending.pop(0)
            if request.future.cancelled():
                continue
            batch.append(request)
            count += len(request.texts)
        return batch

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let documents that are about to arrive join this batch
            batch = self._take_batch()
            if not batch:
                continue
            texts = [text for request in batch for text in request.texts]
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            try:
                vectors = await self.embedder.embed_documents([texts[i] for i in order])
            except asyncio.CancelledError:
                for request in batch + self._pending:
                    request.future.cancel()
                self._pending.clear()
                raise
            except Exception as exc:  # noqa: BLE001 - every waiting caller gets the failure of its batch
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            restored = np.empty_like(vectors)
            restored[order] = vectors
            offset = 0
            for request in batch:
                size = len(request.texts)
                if request.progress is not None:
                    request.progress(size, size)
                if not request.future.done():
                    request.future.set_result(restored[offset : offset + size])
                offset += size

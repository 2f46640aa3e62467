"""Writes of concurrent callers sent together: a drainer takes everything queued (up to ``MAX_CHUNKS``)
as one batch for `Versions.write`, up to ``MAX_IN_FLIGHT`` batches at once, while new writes gather into
the next. So a thousand concurrent callers pay a few rounds of requests, not a thousand."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from carrag.services.stores.elasticsearch.versions import PendingWrite

logger = logging.getLogger(__name__)

MAX_CHUNKS = 2000
MAX_IN_FLIGHT = 4

BatchWriter = Callable[[list[PendingWrite]], Awaitable[list[str | BaseException | None]]]  # each outcome


class WriteBatcher:
    def __init__(self, write_batch: BatchWriter) -> None:
        self._write_batch = write_batch
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._queue: deque[PendingWrite] = deque()
        self._drainer: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()

    async def submit(self, item: PendingWrite) -> str | None:
        """Queue ``item`` and wait for its outcome. The write goes on if the caller is cancelled."""
        item.future = asyncio.get_running_loop().create_future()
        self._queue.append(item)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain(), name="es-write-drainer")
        return await asyncio.shield(item.future)

    async def _drain(self) -> None:
        while self._queue:
            await self._slots.acquire()
            await asyncio.sleep(0)  # let writers that are about to submit join this batch
            batch = self._take()
            if not batch:
                self._slots.release()
                break
            task = asyncio.create_task(self._run(batch), name="es-write-batch")
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    def _take(self) -> list[PendingWrite]:
        batch: list[PendingWrite] = []
        chunks = 0
        while self._queue and (not batch or chunks + len(self._queue[0].chunks) <= MAX_CHUNKS):
            item = self._queue.popleft()
            batch.append(item)
            chunks += len(item.chunks)
        return batch

    async def _run(self, batch: list[PendingWrite]) -> None:
        try:
            outcomes = await self._write_batch(batch)
        except Exception as exc:  # noqa: BLE001 - every caller of the batch gets its failure
            outcomes = [exc] * len(batch)
        except BaseException:  # cancelled: every caller must still get an answer
            logger.warning("write batch interrupted", extra={"documents": len(batch)})
            _settle(batch, [RuntimeError("write interrupted")] * len(batch))
            raise
        finally:
            self._slots.release()
        _settle(batch, outcomes)

    async def aclose(self) -> None:
        """Wait for the batches already sent (closing the store must not cut a write in half)."""
        if self._drainer is not None:
            with contextlib.suppress(Exception):
                await self._drainer
        if self._running:
            await asyncio.wait(set(self._running))
        if (self._drainer is None or self._drainer.done()) and not self._running:
            # no slot is held; the store may be used again from another event loop, and a semaphore
            # stays bound to the loop it first waited in
            self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)


def _settle(batch: list[PendingWrite], outcomes: Sequence[str | BaseException | None]) -> None:
    for item, outcome in zip(batch, outcomes, strict=True):
        if item.future is None or item.future.done():
            continue
        if isinstance(outcome, BaseException):
            item.future.set_exception(outcome)
        else:
            item.future.set_result(outcome)

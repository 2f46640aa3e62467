"""Writes gathered into batches (`batching.py`), without a node: every caller of a batch gets an answer
when the batch fails or is cancelled, a failed batch frees its slot, and a closed batcher bounds its
batches again from another event loop."""

from __future__ import annotations

import asyncio

import numpy as np

from carrag.services.stores.elasticsearch.batching import MAX_CHUNKS, MAX_IN_FLIGHT, WriteBatcher
from carrag.services.stores.elasticsearch.versions import PendingWrite


def pending(name: str, chunks: int = 1) -> PendingWrite:
    """Only the chunk count matters to the batcher; the document stands for the outcome."""
    return PendingWrite(name, [None] * chunks, np.zeros((0, 0)), None)  # type: ignore[arg-type]


async def test_every_caller_of_a_failed_batch_gets_its_error_and_the_slot_is_freed() -> None:
    calls = 0

    async def write_batch(batch: list[PendingWrite]) -> list[str | BaseException | None]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("node gone")
        return [str(item.document) for item in batch]

    batcher = WriteBatcher(write_batch)
    first = await asyncio.gather(*(batcher.submit(pending(f"d{n}")) for n in range(3)), return_exceptions=True)
    assert [type(outcome) for outcome in first] == [ConnectionError] * 3
    # a slot leaked per failed batch would stop the batcher after MAX_IN_FLIGHT failures
    assert await asyncio.wait_for(batcher.submit(pending("later")), 5) == "later"
    await batcher.aclose()


async def test_every_caller_of_a_cancelled_batch_gets_an_answer() -> None:
    started = asyncio.Event()

    async def write_batch(batch: list[PendingWrite]) -> list[str | BaseException | None]:
        started.set()
        await asyncio.sleep(60)
        return [None] * len(batch)

    batcher = WriteBatcher(write_batch)
    callers = [asyncio.create_task(batcher.submit(pending(f"d{n}"))) for n in range(3)]
    await started.wait()
    for task in list(batcher._running):
        task.cancel()
    outcomes = await asyncio.wait_for(asyncio.gather(*callers, return_exceptions=True), 5)
    assert [str(outcome) for outcome in outcomes] == ["write interrupted"] * 3
    await batcher.aclose()


def test_a_closed_batcher_is_bounded_again_in_another_event_loop() -> None:
    """A store closed and used again from another `asyncio.run`: the batches' bound must not stay tied
    to the first loop (a semaphore binds to the loop it first waited in)."""
    most = 0
    in_flight = 0

    async def write_batch(batch: list[PendingWrite]) -> list[str | BaseException | None]:
        nonlocal most, in_flight
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return [str(item.document) for item in batch]

    batcher = WriteBatcher(write_batch)
    names = [f"d{n}" for n in range(2 * MAX_IN_FLIGHT)]

    async def write() -> list[str | None]:
        written = asyncio.gather(*(batcher.submit(pending(name, MAX_CHUNKS)) for name in names))
        try:
            return await asyncio.wait_for(written, 5)
        finally:
            await batcher.aclose()

    for _ in range(2):
        loop = asyncio.new_event_loop()
        try:
            assert loop.run_until_complete(write()) == names
        finally:
            loop.close()
    assert most == MAX_IN_FLIGHT

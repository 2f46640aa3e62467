"""AdmissionGate: a bounded number running, a bounded queue, a bounded wait; then 429 (Overloaded)."""

from __future__ import annotations

import asyncio

import pytest

from carrag.services.admission import AdmissionGate
from carrag.services.errors import Overloaded


async def test_running_then_queued_then_refused_at_once() -> None:
    gate = AdmissionGate(running=1, waiting=1, what="answer generation")
    release = asyncio.Event()
    order: list[str] = []

    async def hold(name: str) -> None:
        async with gate.admit():
            order.append(name)
            await release.wait()

    first = asyncio.create_task(hold("first"))
    await asyncio.sleep(0)
    second = asyncio.create_task(hold("second"))
    await asyncio.sleep(0)
    assert gate.queued == 1
    with pytest.raises(Overloaded, match="at capacity"):
        async with gate.admit():
            pass
    release.set()
    await asyncio.gather(first, second)
    assert order == ["first", "second"] and gate.queued == 0


async def test_a_wait_longer_than_the_timeout_is_refused_and_frees_its_place() -> None:
    gate = AdmissionGate(running=1, waiting=5, what="answer generation", timeout=0.05)
    async with gate.admit():
        with pytest.raises(Overloaded, match="no free slot within 0.05s"):
            async with gate.admit():
                pass
        assert gate.queued == 0
    async with gate.admit():  # the slot was released, nothing leaked
        pass


async def test_callers_arriving_in_one_loop_turn_are_counted_before_any_of_them_runs() -> None:
    """Four questions gathered at once with a wait timeout: one runs, one waits, two are refused.
    (The old check asked whether the semaphore was locked, which under a timeout only happens once
    the event loop has run the first waiter, so all four were let in.)"""
    gate = AdmissionGate(running=1, waiting=1, what="answer generation", timeout=5)
    release = asyncio.Event()

    async def hold() -> str:
        try:
            async with gate.admit():
                await release.wait()
                return "admitted"
        except Overloaded:
            return "refused"

    tasks = [asyncio.create_task(hold()) for _ in range(4)]
    await asyncio.sleep(0.01)
    assert gate.queued == 1
    release.set()
    assert sorted(await asyncio.gather(*tasks)) == ["admitted", "admitted", "refused", "refused"]
    assert gate.queued == 0


async def test_a_cancelled_waiter_gives_its_place_back() -> None:
    gate = AdmissionGate(running=1, waiting=1, what="answer generation", timeout=5)
    release = asyncio.Event()

    async def hold() -> None:
        async with gate.admit():
            await release.wait()

    holder = asyncio.create_task(hold())
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert gate.queued == 0
    late = asyncio.create_task(hold())  # the freed place is usable
    await asyncio.sleep(0.01)
    assert gate.queued == 1
    release.set()
    await asyncio.gather(holder, late)

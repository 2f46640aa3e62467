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

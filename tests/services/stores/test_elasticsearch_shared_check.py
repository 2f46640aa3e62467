"""Both legs of a hybrid search share one live check (`shared_check.py`), without a node."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from carrag.services.errors import UpstreamError
from carrag.services.ids import chunk_id
from carrag.services.stores.elasticsearch.live_state import LiveToken
from carrag.services.stores.elasticsearch.shared_check import SharedCheck
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows


def hit(document_id: str, index: int) -> dict:
    return {"_id": chunk_id(document_id, index), "_source": {"document_id": document_id, "chunk_index": index}}


NO_WINDOWS = PrefetchedWindows(radius=0)


class Reads:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []
        self.fail = fail

    async def __call__(self, sources: Sequence[str], chunk_ids: Sequence[str]):  # type: ignore[no-untyped-def]
        self.calls.append((list(sources), list(chunk_ids)))
        await asyncio.sleep(0)
        if self.fail:
            raise UpstreamError("Elasticsearch is down")
        return "e1", {s: LiveToken(f"doc-{s}", 1, 1) for s in sources}, {c: {"id": c} for c in chunk_ids}


async def leg(shared: SharedCheck, scope, sources: list[str], hits: list[dict], delay: float = 0.0):  # type: ignore[no-untyped-def]
    with scope:
        await asyncio.sleep(delay)  # the leg's own search
        member = SharedCheck.joined()
        assert member is not None
        return await SharedCheck.check(member, sources, hits)


async def test_two_legs_are_checked_in_one_read_with_the_windows_of_the_likely_winners() -> None:
    reads = Reads()
    shared = SharedCheck(reads, PrefetchedWindows(radius=1, share=1 / 3))
    a, b = shared.leg(), shared.leg()
    bm25 = [hit("d1", 4), hit("d2", 0), hit("d3", 9)]
    knn = [hit("d2", 0), hit("d4", 2), hit("d1", 5)]
    first, second = await asyncio.gather(leg(shared, a, ["s1"], bm25), leg(shared, b, ["s2", "s1"], knn, 0.01))
    # one read: every record asked for, and the window of the one hit both legs rank high (d2:0);
    # d2:1 is its only neighbour (index 0 has none before it)
    assert reads.calls == [(["s1", "s2"], [chunk_id("d2", 1)])]
    assert set(first.tokens) == set(second.tokens) == {"s1", "s2"}
    assert first.read_for == second.read_for == {chunk_id("d2", 0)}
    assert first.epoch == second.epoch == "e1"
    assert chunk_id("d4", 2) in first.chunks, "each leg holds the other's hits too (a window may need them)"


async def test_a_leg_that_ends_without_asking_does_not_hold_the_other_back() -> None:
    reads = Reads()
    shared = SharedCheck(reads, NO_WINDOWS)
    a, b = shared.leg(), shared.leg()

    async def empty_leg() -> None:
        with b:
            await asyncio.sleep(0.01)  # e.g. the kNN leg had no embedder: nothing to check

    checked, _ = await asyncio.wait_for(asyncio.gather(leg(shared, a, ["s1"], []), empty_leg()), 2)
    assert set(checked.tokens) == {"s1"} and len(reads.calls) == 1


async def test_a_failed_read_fails_every_leg_that_waited_for_it() -> None:
    shared = SharedCheck(Reads(fail=True), NO_WINDOWS)
    a, b = shared.leg(), shared.leg()
    results = await asyncio.gather(leg(shared, a, ["s1"], []), leg(shared, b, ["s2"], []), return_exceptions=True)
    assert all(isinstance(r, UpstreamError) for r in results)


async def test_after_the_round_a_leg_checks_on_its_own() -> None:
    """A repeated search of a leg (its hits were not confirmed) is checked alone."""
    shared = SharedCheck(Reads(), NO_WINDOWS)
    a = shared.leg()
    await leg(shared, a, ["s1"], [])
    with a:
        assert SharedCheck.joined() is None


async def test_outside_a_round_there_is_no_shared_check() -> None:
    assert SharedCheck.joined() is None


async def test_a_leg_cancelled_before_it_asks_does_not_hold_the_other_back() -> None:
    reads = Reads()
    shared = SharedCheck(reads, NO_WINDOWS)
    a, b = shared.leg(), shared.leg()
    first = asyncio.ensure_future(leg(shared, a, ["s1"], []))
    second = asyncio.ensure_future(leg(shared, b, ["s2"], [], delay=10))
    await asyncio.sleep(0.01)
    second.cancel()
    assert set((await asyncio.wait_for(first, 1)).tokens) == {"s1"}
    assert len(reads.calls) == 1


async def test_a_waiting_leg_cancelled_does_not_cancel_the_read_for_the_other() -> None:
    shared = SharedCheck(Reads(), NO_WINDOWS)
    a, b = shared.leg(), shared.leg()
    first = asyncio.ensure_future(leg(shared, a, ["s1"], []))
    second = asyncio.ensure_future(leg(shared, b, ["s2"], [], delay=0.05))
    await asyncio.sleep(0.01)
    first.cancel()
    assert set((await asyncio.wait_for(second, 1)).tokens) == {"s1", "s2"}


async def test_a_leg_that_raises_before_asking_lets_the_other_be_checked() -> None:
    shared = SharedCheck(Reads(), NO_WINDOWS)
    a, b = shared.leg(), shared.leg()

    async def failing() -> None:
        with b:
            await asyncio.sleep(0.01)
            raise ValueError("the kNN search failed")

    checked, error = await asyncio.wait_for(
        asyncio.gather(leg(shared, a, ["s1"], []), failing(), return_exceptions=True), 1
    )
    assert set(checked.tokens) == {"s1"} and isinstance(error, ValueError)

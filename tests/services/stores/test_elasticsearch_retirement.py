"""Deletes of retired versions a grace period after the epoch moves (`retirement.py`), and the epoch
read beside a search that the grace makes possible (`live_filter.py`, ``EpochRead``), without a node."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from carrag.services.stores.elasticsearch import live_filter, retirement
from carrag.services.stores.elasticsearch.live_filter import EpochRead, LiveFilter
from carrag.services.stores.elasticsearch.live_state import LiveToken
from carrag.services.stores.elasticsearch.mapping import record_key
from carrag.services.stores.elasticsearch.retirement import DelayedDeletes
from carrag.services.stores.elasticsearch.shared_check import SharedCheck
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows
from tests.services.stores.test_elasticsearch_live_filter import Index, hit


class Deletes:
    def __init__(self) -> None:
        self.sent: list[tuple[float, list[str], str]] = []
        self.fail = False

    async def __call__(self, ids: list[str], action: str, refresh: str | bool) -> None:
        if self.fail:
            raise RuntimeError("no answer")
        self.sent.append((time.monotonic(), ids, action))


@pytest.fixture
def grace(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(retirement, "RETIRE_GRACE_SECONDS", 0.3)
    return 0.3


async def test_nothing_is_deleted_before_the_grace_and_everything_due_goes_in_one_request(grace: float) -> None:
    deletes = Deletes()
    delayed = DelayedDeletes(deletes)
    scheduled = time.monotonic()
    await delayed.retire(["a-0", "a-1"], "removing replaced versions")
    await delayed.retire(["b-0"], "removing replaced versions")
    await asyncio.sleep(grace * 0.6)
    assert deletes.sent == [] and delayed.pending == 3
    await asyncio.sleep(grace * 0.8)
    assert [(ids, action) for _, ids, action in deletes.sent] == [(["a-0", "a-1", "b-0"], "removing replaced versions")]
    assert deletes.sent[0][0] - scheduled >= grace
    assert delayed.pending == 0
    await delayed.close()


async def test_flush_waits_for_what_was_scheduled_and_never_sends_early(grace: float) -> None:
    deletes = Deletes()
    delayed = DelayedDeletes(deletes)
    scheduled = time.monotonic()
    await delayed.retire(["a-0"], "deleting a document")
    flushing = asyncio.ensure_future(delayed.flush())
    await asyncio.sleep(grace / 2)
    later = time.monotonic()
    await delayed.retire(["b-0"], "deleting a document")  # after the flush began: not its business
    await flushing
    assert [ids for _, ids, _ in deletes.sent] == [["a-0"]]
    assert deletes.sent[0][0] - scheduled >= grace
    await delayed.close()
    assert [ids for _, ids, _ in deletes.sent] == [["a-0"], ["b-0"]], "close waits for the rest"
    assert deletes.sent[1][0] - later >= grace, "b-0 waited its own grace"


async def test_a_failed_send_does_not_stop_later_ones(grace: float) -> None:
    deletes = Deletes()
    delayed = DelayedDeletes(deletes)
    deletes.fail = True
    await delayed.retire(["a-0"], "x")
    await asyncio.sleep(grace * 1.5)
    deletes.fail = False
    await delayed.retire(["b-0"], "x")
    await asyncio.sleep(grace * 1.5)
    assert [ids for _, ids, _ in deletes.sent] == [["b-0"]], "a-0 is left to the sweep; b-0 still goes"
    await delayed.close()


def epoch_read(value: str | None, index: str | None = "idx", delay: float = 0.0) -> EpochRead:
    async def read() -> tuple[str | None, str | None]:
        await asyncio.sleep(delay)
        return value, index

    return EpochRead.start(read)


def indexed(*hits: dict, index: str = "idx") -> list[dict]:
    return [{**h, "_index": index} for h in hits]


async def remembered(results: list[list[dict]], beside: list[EpochRead]) -> tuple[Index, LiveFilter]:
    """A filter that has read the records of ``s.txt`` (version v1) with epoch g1 twice, so it
    remembers them with the epoch; later searches get the epoch reads ``beside``, one per search."""
    token = LiveToken("v1", seq_no=3, primary_term=1)
    index = Index(results=results, records=[{"s.txt": token}], epochs=["g1"])
    reads = iter(beside)
    live = LiveFilter(index.check, lambda: next(reads))
    live._beside = None  # the first two searches: checked after, as a new process's are
    await live.hits(index.search, 5)
    await live.hits(index.search, 5)
    live._beside = lambda: next(reads)
    index.checks.clear()
    return index, live


async def test_a_remembered_version_with_the_epoch_unmoved_beside_the_search_needs_no_check(grace: float) -> None:
    index, live = await remembered([indexed(hit("v1", 0), hit("v1", 1))], [epoch_read("g1")])
    found = await live.hits(index.search, 5)
    assert [h["_id"] for h in found.hits] == ["v1-0", "v1-1"]
    assert index.checks == [] and live.unchecked == 1


def counting_record_keys(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The source keys `LiveFilter` works out of hits (`record_key`), one entry per call."""
    keys: list[str] = []

    def counted(source: dict) -> str:
        keys.append(record_key(source))
        return keys[-1]

    monkeypatch.setattr(live_filter, "record_key", counted)
    return keys


async def test_each_hit_s_source_key_is_worked_out_once(grace: float, monkeypatch: pytest.MonkeyPatch) -> None:
    hits = indexed(hit("v1", 0), hit("v1", 1), hit("v1", 2))
    index, live = await remembered([hits], [epoch_read("g1"), epoch_read("g2")])
    keys = counting_record_keys(monkeypatch)
    assert len((await live.hits(index.search, 5)).hits) == 3 and live.unchecked == 1
    assert keys == ["s.txt"] * 3, "confirmed by the epoch read beside the search"
    keys.clear()
    index.epochs = ["g2"]
    assert len((await live.hits(index.search, 5)).hits) == 3 and index.checks == [{"s.txt"}]
    assert keys == ["s.txt"] * 3, "checked after the search: the records read, the hits confirmed"


@pytest.mark.parametrize(
    ("beside", "results", "why"),
    [
        (lambda: epoch_read("g2"), [indexed(hit("v1", 0))], "the epoch moved: a version was retired"),
        (lambda: epoch_read(None, None), [indexed(hit("v1", 0))], "no epoch document"),
        (lambda: epoch_read("g1", "other"), [indexed(hit("v1", 0))], "the epoch of another index (a reindex swap)"),
        (lambda: epoch_read("g1", delay=0.2), [indexed(hit("v1", 0))], "the search ended after half the grace"),
        (lambda: epoch_read("g1"), [indexed(hit("v1", 0), hit("v2", 0))], "a hit of a version not remembered"),
        (
            lambda: epoch_read("g1"),
            [indexed(hit("v1", 0), hit("w1", 0, source="w.txt"))],
            "a hit of a source never checked",
        ),
    ],
)
async def test_otherwise_the_hits_are_checked_after_the_search(grace: float, beside, results, why: str) -> None:
    index, live = await remembered(results, [beside()])
    await live.hits(index.search, 5)
    assert index.checks, why
    assert live.unchecked == 0, why


async def test_a_failed_epoch_read_falls_back_to_the_check(grace: float) -> None:
    async def refused() -> tuple[str | None, str | None]:
        raise RuntimeError("503")

    index, live = await remembered([indexed(hit("v1", 0))], [EpochRead.start(refused)])
    assert [h["_id"] for h in (await live.hits(index.search, 5)).hits] == ["v1-0"]
    assert index.checks and live.unchecked == 0


async def test_a_slow_epoch_read_is_given_up_at_half_the_grace(grace: float) -> None:
    started = time.monotonic()
    assert await epoch_read("g1", delay=5.0).within_grace() is None
    assert time.monotonic() - started < grace, "the search does not wait for the read past its use"


async def test_the_legs_of_one_search_share_one_epoch_read(grace: float) -> None:
    reads = 0

    async def read() -> tuple[str | None, str | None]:
        nonlocal reads
        reads += 1
        return "g1", "idx"

    round_ = SharedCheck(lambda *a: None, PrefetchedWindows(0))  # type: ignore[arg-type, return-value]
    first = round_.epoch_beside(read)
    await asyncio.sleep(grace / 10)  # the kNN leg starts its search later, after embedding the query
    assert round_.epoch_beside(read) is first
    assert await first.within_grace() == ("g1", "idx") and reads == 1


async def test_a_moved_epoch_beside_the_search_costs_one_check_not_two(grace: float) -> None:
    index, live = await remembered([indexed(hit("v1", 0))], [epoch_read("g2")])
    index.epochs = ["g2"]
    await live.hits(index.search, 5)
    assert index.checks == [{"s.txt"}], "one read of every record, not the epoch first and then the records"


async def test_deletes_scheduled_while_stopping_are_sent_too(grace: float) -> None:
    deletes = Deletes()
    delayed = DelayedDeletes(deletes)
    await delayed.retire(["a-0"], "x")
    closing = asyncio.ensure_future(delayed.close())
    await asyncio.sleep(grace / 2)
    await delayed.retire(["b-0"], "x")  # a write that was still finishing
    await closing
    assert sorted(i for _, ids, _ in deletes.sent for i in ids) == ["a-0", "b-0"]


async def test_a_send_cancelled_midway_keeps_its_ids_for_the_next(grace: float) -> None:
    sent: list[list[str]] = []
    started = asyncio.Event()

    async def slow(ids: list[str], action: str, refresh: str | bool) -> None:
        started.set()
        await asyncio.sleep(10)
        sent.append(ids)

    delayed = DelayedDeletes(slow)
    await delayed.retire(["a-0"], "x")
    flushing = asyncio.ensure_future(delayed.flush())  # a sweep's flush, cancelled as the process stops
    await started.wait()
    flushing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await flushing
    assert delayed.pending == 1, "not lost: sent again by the next flush or close"


def test_a_store_used_from_a_second_event_loop_still_deletes(grace: float) -> None:
    deletes = Deletes()
    delayed = DelayedDeletes(deletes)

    async def one_run(name: str) -> None:
        await delayed.retire([name], "x")
        await delayed.close()

    asyncio.run(one_run("a-0"))
    asyncio.run(one_run("b-0"))  # as two CLI commands in one process
    assert [ids for _, ids, _ in deletes.sent] == [["a-0"], ["b-0"]]


async def test_an_index_no_reader_searches_yet_deletes_at_once() -> None:
    deletes = Deletes()
    await DelayedDeletes(deletes, immediate=True).retire(["a-0"], "x")
    assert [ids for _, ids, _ in deletes.sent] == [["a-0"]]

"""The reader's side of the visibility protocol, without a node: which hits a search may return
(`reads.live_hits`)."""

from __future__ import annotations

from collections.abc import Sequence

from carrag.services.stores.elasticsearch.reads import ATTEMPTS, live_hits


def hit(document_id: str, index: int, source: str = "s.txt") -> dict:
    return {"_id": f"{document_id}-{index}", "_source": {"document_id": document_id, "source_id": source}}


class Index:
    """What each search returns and what the source records say at each check, step by step."""

    def __init__(self, results: list[list[dict]], records: list[dict[str, str]]) -> None:
        self.results, self.records = results, records
        self.searches: list[frozenset[str]] = []
        self.checks: list[list[str]] = []

    async def search(self, size: int, exclude: frozenset[str]) -> list[dict]:
        self.searches.append(exclude)
        hits = self.results[min(len(self.searches) - 1, len(self.results) - 1)]
        return [h for h in hits if h["_source"]["document_id"] not in exclude][:size]

    async def live_versions(self, keys: Sequence[str]) -> dict[str, str]:
        self.checks.append(list(keys))
        records = self.records[min(len(self.checks) - 1, len(self.records) - 1)]
        return {key: records[key] for key in keys if key in records}


async def test_a_steady_search_is_one_search_and_one_check() -> None:
    index = Index([[hit("v1", 0), hit("v1", 1), hit("w1", 0, "t.txt")]], [{"s.txt": "v1", "t.txt": "w1"}])
    found = await live_hits(index.search, index.live_versions, 5)
    assert [h["_id"] for h in found] == ["v1-0", "v1-1", "w1-0"]
    assert len(index.searches) == 1 and index.checks == [["s.txt", "s.txt", "t.txt"]]


async def test_a_version_still_being_written_is_dropped() -> None:
    """v2's chunks are searchable, its record not flipped yet: v1 is the live one."""
    index = Index([[hit("v2", 0), hit("v1", 0)]], [{"s.txt": "v1"}])
    found = await live_hits(index.search, index.live_versions, 5)
    assert [h["_id"] for h in found] == ["v1-0"]
    assert index.searches == [frozenset(), frozenset({"v2"})]


async def test_hits_of_a_deleted_source_are_dropped_in_one_search_when_nothing_was_crowded_out() -> None:
    index = Index([[hit("gone", 0), hit("x", 0, "t.txt")]], [{"t.txt": "x"}])
    found = await live_hits(index.search, index.live_versions, 5)
    assert [h["_id"] for h in found] == ["x-0"] and len(index.searches) == 1


async def test_a_version_flipped_during_the_search_is_searched_again_not_returned_in_part() -> None:
    """The search saw v1 whole and 2 of v2's 4 chunks; v2 was flipped before the check."""
    index = Index(
        [[hit("v1", 0), hit("v2", 0), hit("v1", 1), hit("v2", 1)], [hit("v2", i) for i in range(4)]],
        [{"s.txt": "v2"}],
    )
    found = await live_hits(index.search, index.live_versions, 10)
    assert [h["_id"] for h in found] == [f"v2-{i}" for i in range(4)]
    assert index.searches == [frozenset(), frozenset({"v1"})], "the replaced version is left out of the repeat"


async def test_dropped_hits_that_crowded_out_live_ones_are_refilled() -> None:
    results = [[hit("old", 0), hit("old", 1), hit("x", 0, "t.txt")], [hit("x", 0, "t.txt"), hit("x", 1, "t.txt")]]
    index = Index(results, [{"t.txt": "x"}])  # s.txt was deleted: its chunks are not yet refreshed away
    found = await live_hits(index.search, index.live_versions, 3)
    assert [h["_id"] for h in found] == ["x-0", "x-1"]
    assert index.searches[-1] == frozenset({"old"})


async def test_a_pending_version_that_goes_live_is_not_kept_excluded() -> None:
    index = Index(
        [[hit("old", 0), hit("new", 0), hit("z", 0, "z.txt")], [hit("old", 0), hit("z", 0, "z.txt")]],
        [{"s.txt": "old", "z.txt": "z"}, {"s.txt": "new", "z.txt": "z"}],
    )
    await live_hits(index.search, index.live_versions, 3)
    assert index.searches[1] == frozenset({"new"}), "pending at the first check"
    assert "new" not in index.searches[2], "live at the second: searched again"


async def test_a_source_that_keeps_changing_is_left_out_after_the_last_attempt() -> None:
    flips = [{"s.txt": f"v{n + 1}", "t.txt": "w"} for n in range(ATTEMPTS)]
    results = [[hit(f"v{n}", 0), hit(f"v{n + 1}", 0), hit("w", 0, "t.txt")] for n in range(ATTEMPTS)]
    index = Index(results, flips)
    found = await live_hits(index.search, index.live_versions, 5)
    assert len(index.searches) == ATTEMPTS
    assert [h["_id"] for h in found] == ["w-0"], "never a version the search may have seen in part"


async def test_no_hits_need_no_check() -> None:
    index = Index([[]], [{}])
    assert await live_hits(index.search, index.live_versions, 5) == []
    assert index.checks == []

"""Neighbour windows read in the live check's multi-get (`windows.py`): which ids are asked for, what
each hit carries, and on a node that they are the chunks `get_windows` returns, of the hit's own
version, also while versions of the source are being replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.ids import chunk_id
from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.live_filter import LiveHits
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_elasticsearch_concurrency import write_version
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors


def source(document_id: str, index: int) -> dict:
    text = f"text {document_id} {index}"
    return {
        "document_id": document_id,
        "chunk_index": index,
        "content": text,
        "char_start": 0,
        "char_end": len(text),
        "filename": "a.txt",
        "source_id": "a.txt",
        "tags": [],
    }


def hit(document_id: str, index: int) -> dict:
    return {"_id": chunk_id(document_id, index), "_source": source(document_id, index), "_score": 1.0}


# --- without a node ----------------------------------------------------------------------------------
def test_the_ids_around_each_hit_are_asked_for_except_the_hits_themselves() -> None:
    hits = [hit("d", 0), hit("d", 1), hit("e", 5)]
    wanted = PrefetchedWindows(radius=1).wanted(hits)
    assert wanted == [chunk_id("d", 2), chunk_id("e", 4), chunk_id("e", 6)]  # no index below 0


def read(windows: PrefetchedWindows, hits: list[dict], chunks: dict) -> LiveHits:
    return LiveHits(hits, chunks, frozenset(h["_id"] for h in windows.covered(hits)))


def test_only_the_best_hits_within_the_budget_get_windows() -> None:
    windows = PrefetchedWindows(radius=2, max_chunks=8)  # 4 ids per hit: two hits fit
    hits = [hit("a", 10), hit("b", 10), hit("c", 10)]
    around = {chunk_id(document, index) for document in "abc" for index in (8, 9, 11, 12)}
    wanted = windows.wanted(hits)
    assert len(wanted) == 8 and set(wanted) <= around
    assert not set(wanted) & {chunk_id("c", index) for index in (8, 9, 11, 12)}
    scored = windows.scored(
        read(windows, hits, {chunk_id("a", 9): source("a", 9), chunk_id("b", 12): source("b", 12)}),
        lambda h: h["_score"],
    )
    assert [(s.neighbour_radius, [n.key for n in s.neighbours]) for s in scored] == [
        (2, [("a", 9)]),
        (2, [("b", 12)]),
        (None, []),
    ]


def test_the_share_of_hits_a_search_keeps_get_windows() -> None:
    windows = PrefetchedWindows(radius=1, share=1 / 3)
    hits = [hit(document, 5) for document in "abcdefg"]
    assert [h["_id"] for h in windows.covered(hits)] == [hits[0]["_id"], hits[1]["_id"], hits[2]["_id"]]  # ⌈7/3⌉


def test_a_hit_whose_window_was_not_read_comes_without_one() -> None:
    """The attempt's best hits were dropped (a replaced version): the hit now first was read without its window."""
    windows = PrefetchedWindows(radius=1, share=0.5)
    attempt = [hit("old", 0), hit("old", 1), hit("new", 7), hit("new", 8)]
    checked = read(windows, attempt, {chunk_id("old", 2): source("old", 2)})
    scored = windows.scored(LiveHits(attempt[2:], checked.chunks, checked.read_for), lambda h: h["_score"])
    assert [s.neighbour_radius for s in scored] == [None, None]


def test_a_hit_next_to_another_hit_gets_it_as_a_neighbour() -> None:
    windows = PrefetchedWindows(radius=1)
    hits = [hit("d", 3), hit("d", 4)]
    scored = windows.scored(read(windows, hits, {}), lambda h: h["_score"])
    assert [n.key for n in scored[0].neighbours] == [("d", 4)]
    assert [n.key for n in scored[1].neighbours] == [("d", 3)]


def test_radius_zero_reads_nothing_more() -> None:
    windows = PrefetchedWindows(radius=0)
    assert windows.wanted([hit("d", 3)]) == []
    assert windows.scored(read(windows, [hit("d", 3)], {}), lambda h: 1.0)[0].neighbour_radius is None


# --- on a node ---------------------------------------------------------------------------------------
@pytest.fixture
async def stores(es_url: str) -> AsyncIterator[list[ElasticsearchStore]]:
    index = es_index_name()
    opened = [
        ElasticsearchStore(
            es_url, index=index, refresh_interval=ES_TEST_REFRESH_INTERVAL, neighbour_window=1, retrieval_k_multiplier=1
        )
        for _ in range(3)
    ]
    for store in opened:
        await store.open()
    yield opened
    raw = AsyncElasticsearch(es_url)
    await drop_es_index(raw, index)
    await raw.close()
    for store in opened:
        await store.close()


@pytest.mark.elasticsearch
async def test_each_hit_carries_the_chunks_get_windows_returns(stores: list[ElasticsearchStore]) -> None:
    store = stores[0]
    texts = [f"heron note {i}" + (" kingfisher" if i in (0, 4, 7) else "") for i in range(8)]
    vectors = unit_vectors(len(texts), 3)
    await store.write_document(record("doc", "birds.txt", chunks=len(texts)), chunks_of(*texts), vectors, IDENTITY)
    lexical = await store.lexical_search("kingfisher", 3, SearchFilters())
    semantic = await store.vector_search(vectors[4], 3, SearchFilters())
    assert {h.chunk.chunk_index for h in lexical} == {0, 4, 7}
    for found in (*lexical, *semantic):
        expected = await store.get_windows([found.chunk.key], 1)
        assert found.neighbour_radius == 1
        assert sorted(n.key for n in found.neighbours) == sorted(c.key for c in expected if c.key != found.chunk.key)
        assert {n.text for n in found.neighbours} == {c.text for c in expected if c.key != found.chunk.key}


@pytest.mark.elasticsearch
async def test_neighbours_are_of_the_hits_own_version_while_versions_race(stores: list[ElasticsearchStore]) -> None:
    """Replaces race on two stores; a third searches. Every neighbour a hit carries is a chunk of the
    hit's version (its text names the version), and a result holds one version."""
    await write_version(stores[0], "v0", seed=0)
    stop = asyncio.Event()
    seen: list[tuple[str, set[str]]] = []

    async def observe() -> None:
        while not stop.is_set():
            for hits in (
                await stores[2].lexical_search("egret passage", 100, SearchFilters()),
                await stores[2].vector_search(unit_vectors(1, 99)[0], 100, SearchFilters()),
            ):
                assert len({h.chunk.document_id for h in hits}) <= 1
                for found in hits:
                    version = found.chunk.text.rsplit(" ", 1)[1]
                    assert found.neighbour_radius == 1
                    assert {n.document_id for n in found.neighbours} <= {found.chunk.document_id}
                    assert all(abs(n.chunk_index - found.chunk.chunk_index) == 1 for n in found.neighbours)
                    seen.append((version, {n.text.rsplit(" ", 1)[1] for n in found.neighbours}))

    observer = asyncio.create_task(observe())
    for round_number in range(1, 5):
        await asyncio.gather(
            write_version(stores[0], f"a{round_number}", seed=round_number),
            write_version(stores[1], f"b{round_number}", seed=round_number + 50),
        )
    stop.set()
    await observer
    assert seen
    assert all(neighbour_versions <= {version} for version, neighbour_versions in seen), (
        "a neighbour of another version"
    )
    whole = sum(1 for version, neighbours in seen if neighbours == {version})
    assert whole >= len(seen) * 0.9, "neighbours are found, not just consistent"

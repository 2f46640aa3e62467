"""Chunks store their neighbours (`mapping.py` ``neighbours``), so a search hit carries its expansion
window and the live check reads no window for it (`windows.py`): what is stored, that it equals a
window read, which ids the check still asks for (chunks written before the field), that only the
search legs fetch the field, that an index from before the field gets it, and that reindex writes it."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import pickle
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np
import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.ids import chunk_id
from carrag.services.models import Chunk, ScoredChunk, SearchFilters
from carrag.services.retrieval.expansion import build_passages, windows_in_hand
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch import windows as windows_module
from carrag.services.stores.elasticsearch.live_filter import LiveHits
from carrag.services.stores.elasticsearch.mapping import (
    BASE_PROPERTIES,
    CHUNK_SOURCE_EXCLUDES,
    SEARCH_SOURCE_EXCLUDES,
    chunk_source,
    neighbour_chunks,
    neighbours_of,
    stored_neighbours,
    to_chunk,
)
from carrag.services.stores.elasticsearch.reindex import reindex
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_elasticsearch_reindex import HashingEmbedder
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

TEXTS = [f"plover note {i}" + (" sandpiper" if i in (0, 3, 5) else "") for i in range(6)]


def stored_hit(document_id: str, index: int, count: int = 6) -> dict:
    """A hit as a search leg gets it: the chunk's JSON with its stored neighbours."""
    chunks = chunks_of(*(f"text {document_id} {i}" for i in range(count)), section="S")
    source = chunk_source(
        record(document_id, "a.txt"), chunks[index], np.zeros(3), neighbours_of(chunks, chunks[index])
    )
    source.pop("embedding")
    return {"_id": chunk_id(document_id, index), "_source": source, "_score": 1.0}


def old_hit(document_id: str, index: int) -> dict:
    """A hit of a chunk written before chunks stored their neighbours."""
    found = stored_hit(document_id, index)
    found["_source"].pop("neighbours")
    return found


# --- without a node ----------------------------------------------------------------------------------
def test_the_neighbours_of_a_chunk_are_those_within_the_radius_of_its_version() -> None:
    chunks = chunks_of("a", "b", "c", "d")
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[0])] == [1]
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[2])] == [1, 3]
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[3])] == [2]
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[1], radius=2)] == [0, 2, 3]
    assert neighbours_of(chunks[:1], chunks[0]) == []
    shuffled = [chunks[3], chunks[1], chunks[0], chunks[2]]  # not in index order: found all the same
    assert [c.chunk_index for c in neighbours_of(shuffled, chunks[2])] == [1, 3]
    gaps = [Chunk(0, "a", 0, 1), Chunk(2, "c", 4, 5), Chunk(3, "d", 6, 7)]  # only what a window read finds
    assert [c.chunk_index for c in neighbours_of(gaps, gaps[1])] == [3]


def test_stored_neighbours_read_back_as_the_chunks_themselves() -> None:
    document = dataclasses.replace(
        record("doc", "birds/a.txt", tags=["x"], title="Birds"), external_id="ext-1", collection_id="c1"
    )
    chunks = chunks_of("one", "two", "three", section="Waders")
    vectors = unit_vectors(3, 0)
    sources = [chunk_source(document, c, v, neighbours_of(chunks, c)) for c, v in zip(chunks, vectors, strict=True)]
    assert sources[1]["neighbours"]["radius"] == 1
    assert stored_neighbours(sources[1], 1) == [to_chunk(sources[0]), to_chunk(sources[2])]
    assert stored_neighbours(sources[1], 1, to_chunk(sources[1])) == [to_chunk(sources[0]), to_chunk(sources[2])]
    assert to_chunk(sources[0]).external_id == "ext-1" and to_chunk(sources[0]).collection_id == "c1"
    assert stored_neighbours(sources[0], 1) == [to_chunk(sources[1])]
    assert stored_neighbours(sources[1], 0) == []
    assert stored_neighbours(sources[1], 2) is None, "a wider window than stored is read"
    assert stored_neighbours(chunk_source(document, chunks[1], vectors[1]), 1) is None, "none stored"


def test_only_the_search_legs_fetch_the_stored_neighbours() -> None:
    assert "neighbours" in CHUNK_SOURCE_EXCLUDES and "embedding" in CHUNK_SOURCE_EXCLUDES
    assert SEARCH_SOURCE_EXCLUDES == ["embedding", "regions"]  # regions: read by chunk listings only


def test_hits_that_store_their_neighbours_need_no_window_read() -> None:
    windows = PrefetchedWindows(radius=1)
    hits = [stored_hit("d", 2), old_hit("e", 3), stored_hit("f", 5)]
    assert windows.wanted(hits) == [chunk_id("e", 2), chunk_id("e", 4)]
    assert [h["_id"] for h in windows.covered(hits)] == [chunk_id("e", 3)]
    assert [h["_id"] for h in windows.covered_across([hits, hits[::-1]])] == [chunk_id("e", 3)]
    assert windows.wanted([stored_hit("d", 2), stored_hit("f", 5)]) == []
    read = {chunk_id("e", 2): old_hit("e", 2)["_source"]}  # e:4 not found: a shorter window
    scored = windows.scored(LiveHits(hits, read, frozenset({chunk_id("e", 3)})), lambda h: h["_score"])
    assert [(s.neighbour_radius, [n.key for n in s.neighbours]) for s in scored] == [
        (1, [("d", 1), ("d", 3)]),
        (1, [("e", 2)]),
        (1, [("f", 4)]),  # the last chunk: one neighbour
    ]
    assert scored[0].neighbours[0] == to_chunk(old_hit("d", 1)["_source"])


def test_a_window_wider_than_the_stored_one_is_read_as_before() -> None:
    windows = PrefetchedWindows(radius=2)
    hits = [stored_hit("d", 2)]
    assert windows.wanted(hits) == [chunk_id("d", index) for index in (0, 1, 3, 4)]
    scored = windows.scored(LiveHits(hits, {}, frozenset()), lambda h: h["_score"])
    assert scored[0].neighbour_radius is None, "not read: expanded by get_windows"


def test_the_budget_counts_only_the_hits_whose_windows_are_read() -> None:
    windows = PrefetchedWindows(radius=1, max_chunks=4)  # 2 hits' windows
    hits = [stored_hit("a", 2), stored_hit("b", 2), old_hit("c", 2), old_hit("d", 2), old_hit("e", 2)]
    assert [h["_source"]["document_id"] for h in windows.covered(hits)] == ["c", "d"]


def counting_conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The document ids whose stored neighbours `windows.py` makes chunks of, one entry per conversion."""
    converted: list[str] = []

    def counted(source: dict, radius: int, chunk: Any = None) -> Any:
        converted.append(source["document_id"])
        return neighbour_chunks(source, radius, chunk)

    monkeypatch.setattr(windows_module, "neighbour_chunks", counted)
    return converted


def test_stored_neighbours_become_chunks_only_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    converted = counting_conversions(monkeypatch)
    hits = [stored_hit(document, 2) for document in "abc"]
    scored = PrefetchedWindows(radius=1).scored(LiveHits(hits, {}), lambda h: h["_score"])
    assert converted == [], "no hit's neighbours are made chunks by the search itself"
    assert all(found.neighbour_radius == 1 for found in scored)
    expected = tuple(stored_neighbours(hits[1]["_source"], 1) or ())
    assert scored[1].neighbours == expected and converted == ["b"]
    assert scored[1].neighbours == expected and converted == ["b"], "made once"
    assert [n.key for n in scored[0].neighbours] == [("a", 1), ("a", 3)] and converted == ["b", "a"]


def test_a_hit_with_neighbours_made_on_demand_is_the_one_made_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    hit = stored_hit("d", 2)
    chunk = to_chunk(hit["_source"])
    eager = ScoredChunk(chunk, 1.0, 1, tuple(stored_neighbours(hit["_source"], 1) or ()))

    def lazy() -> ScoredChunk:
        return PrefetchedWindows(radius=1).scored(LiveHits([hit], {}), lambda h: h["_score"])[0]

    assert lazy() == eager and eager == lazy() and (lazy() != eager) is False
    assert lazy() != ScoredChunk(chunk, 1.0, 1, ()) and ScoredChunk(chunk, 1.0, 1, ()) != lazy()
    assert copy.deepcopy(lazy()) == eager and copy.copy(lazy()) == eager
    assert pickle.loads(pickle.dumps(lazy())) == eager
    assert dataclasses.replace(lazy(), score=2.0) == dataclasses.replace(eager, score=2.0)
    assert dataclasses.asdict(lazy()) == dataclasses.asdict(eager)
    assigned = lazy()
    assigned.neighbours = ()
    assert assigned.neighbours == (), "an assignment stands"
    converted = counting_conversions(monkeypatch)
    unread = lazy()
    with pytest.raises(TypeError):
        hash(unread)
    assert converted == [] and not hasattr(unread, "__dict__")


def test_expansion_reads_the_stored_neighbours_of_the_winners_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The passages are those of neighbours made at once, and only the winners' are made."""
    hits = [stored_hit(document, index) for document in "abcde" for index in (1, 4)]
    winners = [hits[0], hits[5], hits[1]]  # a:1, c:4, a:4
    eager = {
        to_chunk(h["_source"]).key: ScoredChunk(
            to_chunk(h["_source"]), 1.0, 1, tuple(stored_neighbours(h["_source"], 1) or ())
        )
        for h in hits
    }
    converted = counting_conversions(monkeypatch)
    found = {s.chunk.key: s for s in PrefetchedWindows(radius=1).scored(LiveHits(hits, {}), lambda h: h["_score"])}
    assert converted == []

    def passages(found: dict) -> list[tuple]:
        chunks = [found[to_chunk(h["_source"]).key].chunk for h in winners]
        neighbours, missing = windows_in_hand(chunks, found, 1)
        assert missing == []
        return [
            (p.winners, p.document_id, p.first_index, p.last_index, p.text, [c.key for c in p.chunks])
            for p in build_passages(chunks, neighbours, 1)
        ]

    expanded = passages(found)
    assert expanded == passages(eager)
    assert sorted(converted) == ["a", "a", "c"], "one conversion per winner"
    assert [(p[1], p[4]) for p in expanded] == [
        ("a", "text a 0\ntext a 1\ntext a 2\ntext a 3\ntext a 4\ntext a 5"),
        ("c", "text c 3\ntext c 4\ntext c 5"),
    ]


# --- on a node ---------------------------------------------------------------------------------------
class ReadSpy:
    """Records the chunk ids each live check asks for, and the ``_source`` keys of every chunk any
    search or multi-get returns, per call."""

    def __init__(self, store: ElasticsearchStore) -> None:
        self.check_chunk_ids: list[list[str]] = []
        self.fields: dict[str, list[set[str]]] = {"search": [], "mget": []}
        versions = store.versions
        check = versions.live_check_read

        async def live_check_read(sources: Sequence[str], chunk_ids: Sequence[str]) -> Any:
            self.check_chunk_ids.append(list(chunk_ids))
            return await check(sources, chunk_ids)

        versions.live_check_read = live_check_read  # type: ignore[method-assign]
        client = store.client
        for name in ("search", "mget"):
            self._wrap(client, name)

    def _wrap(self, client: AsyncElasticsearch, name: str) -> None:
        original = getattr(client, name)

        async def spied(*args: Any, **kwargs: Any) -> Any:
            response = await original(*args, **kwargs)
            docs = response["hits"]["hits"] if name == "search" else response["docs"]
            self.fields[name] += [set(doc["_source"]) for doc in docs if "content" in (doc.get("_source") or {})]
            return response

        setattr(client, name, spied)

    def asked(self) -> list[str]:
        return [chunk for call in self.check_chunk_ids for chunk in call]

    def clear(self) -> None:
        self.check_chunk_ids.clear()
        self.fields = {"search": [], "mget": []}


@pytest.fixture
async def store(es_url: str) -> AsyncIterator[ElasticsearchStore]:
    opened = ElasticsearchStore(
        es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL, neighbour_window=1
    )
    await opened.open()
    yield opened
    await drop_es_index(opened.client, opened.index)
    await opened.close()


async def write_birds(store: ElasticsearchStore, document_id: str = "doc", source_id: str = "birds.txt") -> np.ndarray:
    vectors = unit_vectors(len(TEXTS), 3)
    await store.write_document(
        record(document_id, source_id, chunks=len(TEXTS), tags=["t"], title="Waders"),
        chunks_of(*TEXTS, section="Shore"),
        vectors,
        IDENTITY,
    )
    return vectors


async def forget_neighbours(store: ElasticsearchStore) -> None:
    """Make every chunk as one written before chunks stored their neighbours (rewritten without them)."""
    await store.client.indices.refresh(index=store.index)
    response = await store.client.search(index=store.index, query={"term": {"doc_kind": "chunk"}}, size=1000)
    for found in response["hits"]["hits"]:
        source = {key: value for key, value in found["_source"].items() if key != "neighbours"}
        await store.client.index(index=store.index, id=found["_id"], document=source)
    await store.client.indices.refresh(index=store.index)


async def assert_hits_carry_their_windows(
    store: ElasticsearchStore, vectors: np.ndarray, *, stored: bool = True
) -> None:
    """Every hit of both legs carries exactly the chunks (all fields) a window read returns. Chunks
    without stored neighbours carry them only when a check after the search read them; a search the
    epoch read beside it confirmed (`live_filter.py`) leaves them to `get_windows`."""
    lexical = await store.lexical_search("sandpiper", 3, SearchFilters())
    semantic = await store.vector_search(vectors[4], 3, SearchFilters())
    assert {h.chunk.chunk_index for h in lexical} == {0, 3, 5}
    for found in (*lexical, *semantic):
        window = await store.get_windows([found.chunk.key], 1)
        if not stored and found.neighbour_radius is None:
            assert found.neighbours == ()
            continue
        assert found.neighbour_radius == 1
        expected = sorted((c for c in window if c.key != found.chunk.key), key=lambda c: c.chunk_index)
        assert sorted(found.neighbours, key=lambda c: c.chunk_index) == expected
        assert expected and all(c.title == "Waders" and c.tags == ["t"] and c.section == "Shore" for c in expected)


@pytest.mark.elasticsearch
async def test_written_chunks_store_their_neighbours(store: ElasticsearchStore) -> None:
    await write_birds(store)
    response = await store.client.get(index=store.index, id=chunk_id("doc", 2))
    stored = response["_source"]["neighbours"]
    assert stored["radius"] == 1
    assert [(n["chunk_index"], n["content"], n["pages"], n["section"]) for n in stored["chunks"]] == [
        (1, TEXTS[1], [2], "Shore"),
        (3, TEXTS[3], [4], "Shore"),
    ]
    last = await store.client.get(index=store.index, id=chunk_id("doc", 5))
    assert [n["chunk_index"] for n in last["_source"]["neighbours"]["chunks"]] == [4]


@pytest.mark.elasticsearch
async def test_hits_carry_their_stored_windows_and_the_check_reads_none(store: ElasticsearchStore) -> None:
    vectors = await write_birds(store)
    spy = ReadSpy(store)
    await assert_hits_carry_their_windows(store, vectors)
    assert spy.check_chunk_ids and spy.asked() == [], "no window read in the checks"
    # hybrid: both legs in one shared check, still no window read
    spy.clear()
    shared = store.shared_check()
    a, b = shared.leg(), shared.leg()

    async def in_leg(scope: Any, search: Any) -> Any:
        with scope:
            return await search

    results = await asyncio.gather(
        in_leg(a, store.lexical_search("sandpiper", 3, SearchFilters())),
        in_leg(b, store.vector_search(vectors[0], 3, SearchFilters())),
    )
    assert len(spy.check_chunk_ids) <= 1 and spy.asked() == []
    assert all(found.neighbour_radius == 1 for leg in results for found in leg)


@pytest.mark.elasticsearch
async def test_chunks_without_stored_neighbours_are_expanded_as_before(store: ElasticsearchStore) -> None:
    vectors = await write_birds(store)
    await forget_neighbours(store)
    spy = ReadSpy(store)
    lexical = await store.lexical_search("sandpiper", 3, SearchFilters())
    # around 0, 3 and 5, less the hits themselves (6: past the last chunk, not found)
    windows = {chunk_id("doc", i) for i in (1, 2, 4, 6)}
    assert spy.check_chunk_ids and all(set(ids) == windows for ids in spy.check_chunk_ids)
    assert all(found.neighbour_radius == 1 for found in lexical)
    await assert_hits_carry_their_windows(store, vectors, stored=False)
    # a mix of old and new chunks: only the old ones' windows are read
    await write_birds(store, "new", "other.txt")
    spy.clear()
    found = await store.lexical_search("sandpiper", 6, SearchFilters())
    assert {h.chunk.document_id for h in found} == {"doc", "new"}
    assert spy.asked() and set(spy.asked()) <= {chunk_id("doc", i) for i in range(len(TEXTS) + 1)}


@pytest.mark.elasticsearch
async def test_only_the_search_legs_fetch_the_stored_neighbours_on_a_node(store: ElasticsearchStore) -> None:
    vectors = await write_birds(store)
    await forget_neighbours(store)
    await write_birds(store, "new", "other.txt")
    spy = ReadSpy(store)
    await store.lexical_search("sandpiper", 6, SearchFilters())
    await store.vector_search(vectors[1], 6, SearchFilters())
    assert spy.fields["search"] and any("neighbours" in keys for keys in spy.fields["search"])
    assert spy.fields["mget"], "the checks read the old chunks' windows"
    spy.fields["search"].clear()
    listing = await store.get_chunks("new")
    assert [c.chunk.chunk_index for c in listing] == list(range(len(TEXTS)))
    await store.get_windows([("new", 2)], 1)
    assert spy.fields["search"] and spy.fields["mget"]
    assert not any("neighbours" in keys for keys in spy.fields["mget"])
    assert not any("neighbours" in keys for keys in spy.fields["search"])


@pytest.mark.elasticsearch
async def test_an_index_from_before_stored_neighbours_gets_the_field(es_url: str) -> None:
    raw = AsyncElasticsearch(es_url)
    name = es_index_name()
    before = {key: value for key, value in BASE_PROPERTIES.items() if key != "neighbours"}
    await raw.indices.create(
        index=f"{name}-000001", mappings={"dynamic": "strict", "properties": before}, aliases={name: {}}
    )
    store = ElasticsearchStore(es_url, index=name, refresh_interval=ES_TEST_REFRESH_INTERVAL, neighbour_window=1)
    try:
        await store.open()
        properties = (await raw.indices.get_mapping(index=name))[f"{name}-000001"]["mappings"]["properties"]
        assert properties["neighbours"] == {"type": "object", "enabled": False}
        vectors = await write_birds(store)
        spy = ReadSpy(store)
        await assert_hits_carry_their_windows(store, vectors)
        assert spy.asked() == []
    finally:
        await store.close()
        await raw.indices.delete(index=f"{name}-000001,{name}-originals", ignore_unavailable=True)
        await raw.close()


@pytest.mark.elasticsearch
async def test_reindex_writes_the_stored_neighbours(store: ElasticsearchStore) -> None:
    await write_birds(store)
    await forget_neighbours(store)  # as an index written before: reindex adds them
    embedder = HashingEmbedder()
    result = await reindex(store, embedder, report=lambda line: None)  # type: ignore[arg-type]
    assert result.chunks == len(TEXTS)
    response = await store.client.get(index=result.new_index, id=chunk_id("doc", 3))
    assert [n["chunk_index"] for n in response["_source"]["neighbours"]["chunks"]] == [2, 4]
    assert all("neighbours" not in text for text in embedder.texts)
    spy = ReadSpy(store)
    vector = (await embedder.embed_documents([TEXTS[4]]))[0]
    await assert_hits_carry_their_windows(store, np.array([vector] * len(TEXTS)))
    assert spy.asked() == []

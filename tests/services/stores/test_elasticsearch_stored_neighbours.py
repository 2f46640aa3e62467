"""Chunks store their neighbours (`mapping.py` ``neighbours``), so a search hit carries its expansion
window: what is stored, that it equals a window read, that chunks written before the field come
without (expanded by `get_windows`), that only the search legs fetch the field, that an index from
before the field gets it, and that reindex writes it."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import numpy as np
import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.ids import chunk_id
from carrag.services.models import Chunk, SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.mapping import (
    BASE_PROPERTIES,
    chunk_source,
    neighbours_of,
    stored_neighbours,
    to_chunk,
)
from carrag.services.stores.elasticsearch.reindex import reindex
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_elasticsearch_reindex import HashingEmbedder
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

TEXTS = [f"plover note {i}" + (" sandpiper" if i in (0, 3, 5) else "") for i in range(6)]


# --- without a node ----------------------------------------------------------------------------------
def test_the_neighbours_of_a_chunk_are_those_next_to_it_in_its_version() -> None:
    chunks = chunks_of("a", "b", "c", "d")
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[0])] == [1]
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[2])] == [1, 3]
    assert [c.chunk_index for c in neighbours_of(chunks, chunks[3])] == [2]
    assert neighbours_of(chunks[:1], chunks[0]) == []
    shuffled = [chunks[3], chunks[1], chunks[0], chunks[2]]  # not in index order: found all the same
    assert [c.chunk_index for c in neighbours_of(shuffled, chunks[2])] == [1, 3]
    gaps = [Chunk(0, "a", 0, 1), Chunk(2, "c", 4, 5), Chunk(3, "d", 6, 7)]
    assert [c.chunk_index for c in neighbours_of(gaps, gaps[1])] == [3]


def test_stored_neighbours_read_back_as_the_chunks_themselves() -> None:
    document = dataclasses.replace(
        record("doc", "birds/a.txt", tags=["x"], title="Birds"), external_id="ext-1", collection_id="c1"
    )
    chunks = chunks_of("one", "two", "three", section="Waders")
    vectors = unit_vectors(3, 0)
    sources = [chunk_source(document, c, v, neighbours_of(chunks, c)) for c, v in zip(chunks, vectors, strict=True)]
    middle = to_chunk(sources[1])
    assert stored_neighbours(sources[1]) == (to_chunk(sources[0]), to_chunk(sources[2]))
    assert stored_neighbours(sources[0]) == (middle,)
    before = {key: value for key, value in sources[1].items() if key != "neighbours"}
    assert stored_neighbours(before) is None, "written before the field: none stored"


# --- on a node ---------------------------------------------------------------------------------------
@pytest.fixture
async def store(es_url: str) -> AsyncIterator[ElasticsearchStore]:
    opened = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
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


async def assert_hits_carry_their_windows(store: ElasticsearchStore, vectors: np.ndarray) -> None:
    """Every hit of both legs carries exactly the chunks (all fields) a window read returns."""
    lexical = await store.lexical_search("sandpiper", 3, SearchFilters())
    semantic = await store.vector_search(vectors[4], 3, SearchFilters())
    assert {h.chunk.chunk_index for h in lexical} == {0, 3, 5}
    for found in (*lexical, *semantic):
        window = await store.get_windows([found.chunk.key], 1)
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


@pytest.mark.elasticsearch
async def test_hits_carry_their_stored_windows(store: ElasticsearchStore) -> None:
    await assert_hits_carry_their_windows(store, await write_birds(store))


@pytest.mark.elasticsearch
async def test_chunks_without_stored_neighbours_come_without_a_window(store: ElasticsearchStore) -> None:
    await write_birds(store)
    await forget_neighbours(store)
    lexical = await store.lexical_search("sandpiper", 3, SearchFilters())
    assert lexical and all(found.neighbour_radius is None and found.neighbours == () for found in lexical)


@pytest.mark.elasticsearch
async def test_only_the_search_legs_fetch_the_stored_neighbours_on_a_node(store: ElasticsearchStore) -> None:
    await write_birds(store)
    listing = await store.get_chunks("doc")
    windows = await store.get_windows([("doc", 2)], 1)
    assert len(listing) == len(TEXTS) and len(windows) == 3
    sent: list[object] = []
    search = store.client.search

    async def spied(**kwargs: object) -> object:
        sent.append(kwargs.get("source_excludes"))
        return await search(**kwargs)

    store.client.search = spied  # type: ignore[method-assign]
    await store.lexical_search("sandpiper", 3, SearchFilters())
    await store.get_chunks("doc")
    assert sent[0] == ["embedding", "regions"] and "neighbours" in sent[-1]  # type: ignore[operator]


@pytest.mark.elasticsearch
async def test_an_index_from_before_stored_neighbours_gets_the_field(es_url: str) -> None:
    raw = AsyncElasticsearch(es_url)
    name = es_index_name()
    before = {key: value for key, value in BASE_PROPERTIES.items() if key != "neighbours"}
    await raw.indices.create(
        index=f"{name}-000001", mappings={"dynamic": "strict", "properties": before}, aliases={name: {}}
    )
    store = ElasticsearchStore(es_url, index=name, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    try:
        await store.open()
        properties = (await raw.indices.get_mapping(index=name))[f"{name}-000001"]["mappings"]["properties"]
        assert properties["neighbours"] == {"type": "object", "enabled": False}
        await assert_hits_carry_their_windows(store, await write_birds(store))
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
    vector = (await embedder.embed_documents([TEXTS[4]]))[0]
    await assert_hits_carry_their_windows(store, np.array([vector] * len(TEXTS)))

"""The search legs on a node (`reads.IndexReads`): the neighbour windows of the winners are chunks of
the hit's own version, read by id, also while versions of the source are being replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_elasticsearch_concurrency import write_version
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch


@pytest.fixture
async def stores(es_url: str) -> AsyncIterator[list[ElasticsearchStore]]:
    index = es_index_name()
    opened = [ElasticsearchStore(es_url, index=index, refresh_interval=ES_TEST_REFRESH_INTERVAL) for _ in range(3)]
    for store in opened:
        await store.open()
    yield opened
    raw = AsyncElasticsearch(es_url)
    await drop_es_index(raw, index)
    await raw.close()
    for store in opened:
        await store.close()


async def test_the_windows_of_hits_are_the_chunks_around_them(stores: list[ElasticsearchStore]) -> None:
    store = stores[0]
    texts = [f"heron note {i}" + (" kingfisher" if i in (0, 4, 7) else "") for i in range(8)]
    await store.write_document(
        record("doc", "birds.txt", chunks=len(texts)), chunks_of(*texts), unit_vectors(len(texts), 3), IDENTITY
    )
    lexical = await store.lexical_search("kingfisher", 3, SearchFilters())
    assert {h.chunk.chunk_index for h in lexical} == {0, 4, 7}
    windows = await store.get_windows([h.chunk.key for h in lexical], 1)
    assert sorted(c.chunk_index for c in windows) == [0, 1, 3, 4, 5, 6, 7]
    assert all(c.text == texts[c.chunk_index] and c.document_id == "doc" for c in windows)


async def test_windows_are_of_the_hits_own_version_while_versions_race(stores: list[ElasticsearchStore]) -> None:
    """Replaces race on two stores; a third searches and reads the windows of its hits. Every chunk
    of a window is of its hit's version (its text names the version), and a result holds one version."""
    await write_version(stores[0], "v0", seed=0)
    stop = asyncio.Event()
    seen = 0

    async def observe() -> None:
        nonlocal seen
        while not stop.is_set():
            for hits in (
                await stores[2].lexical_search("egret passage", 100, SearchFilters()),
                await stores[2].vector_search(unit_vectors(1, 99)[0], 100, SearchFilters()),
            ):
                assert len({h.chunk.document_id for h in hits}) <= 1
                for window in await stores[2].get_windows([h.chunk.key for h in hits], 1):
                    assert window.text.rsplit(" ", 1)[1] == window.document_id
                    seen += 1

    observer = asyncio.create_task(observe())
    for round_number in range(1, 5):
        await asyncio.gather(
            write_version(stores[0], f"a{round_number}", seed=round_number),
            write_version(stores[1], f"b{round_number}", seed=round_number + 50),
        )
    stop.set()
    await observer
    assert seen

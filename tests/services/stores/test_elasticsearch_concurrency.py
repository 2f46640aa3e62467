"""Several independent writers on one index (issue 12, item 1): each store below has its own client
and its own write batcher, nothing shared but Elasticsearch, as two API processes would. Replaces
and deletes race; readers must see one whole version of a source at a time, and exactly one
version (or none, after a delete) must survive."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch

CHUNKS = 12
ROUNDS = 6


@pytest.fixture
async def stores(es_url: str) -> AsyncIterator[list[ElasticsearchStore]]:
    index = es_index_name()
    opened = [ElasticsearchStore(es_url, index=index, refresh_interval=ES_TEST_REFRESH_INTERVAL) for _ in range(3)]
    for store in opened:
        await store.open()
    yield opened
    for store in opened:
        await store.close()
    raw = AsyncElasticsearch(es_url)
    await drop_es_index(raw, index)
    await raw.close()


def version_texts(name: str) -> list[str]:
    return [f"egret passage {i} {name}" for i in range(CHUNKS)]


async def write_version(store: ElasticsearchStore, name: str, seed: int) -> None:
    await store.write_document(
        record(name, "shared.txt", chunks=CHUNKS), chunks_of(*version_texts(name)), unit_vectors(CHUNKS, seed), IDENTITY
    )


async def surviving_versions(store: ElasticsearchStore, stores: list[ElasticsearchStore]) -> list[str]:
    """Every version record of the shared source still in the index, live or not."""
    await store.client.indices.refresh(index=store.index)
    response = await store.client.search(
        index=store.index,
        query={"bool": {"filter": [{"term": {"doc_kind": "version"}}, {"term": {"source_id": "shared.txt"}}]}},
        size=100,
    )
    return sorted(hit["_source"]["document_id"] for hit in response["hits"]["hits"])


class Observer:
    """Searches continuously through its own store; records the versions of each result."""

    def __init__(self, store: ElasticsearchStore) -> None:
        self.store = store
        self.results: list[list[tuple[str, int]]] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            lexical = await self.store.lexical_search("egret passage", 100, SearchFilters())
            vector = await self.store.vector_search(unit_vectors(1, 99)[0], 100, SearchFilters())
            for hits in (lexical, vector):
                self.results.append([(h.chunk.document_id, h.chunk.chunk_index) for h in hits])

    def check(self) -> None:
        assert self.results
        for keys in self.results:
            versions = {document_id for document_id, _ in keys}
            assert len(versions) <= 1, f"a reader saw {sorted(versions)} at once"
            assert len(keys) in (0, CHUNKS), f"a reader saw {len(keys)} of {CHUNKS} chunks"


async def test_racing_replaces_leave_exactly_one_version(stores: list[ElasticsearchStore]) -> None:
    first, second, reader = stores
    await write_version(first, "v0", 0)
    observer = Observer(reader)
    watching = asyncio.create_task(observer.run())
    for round_number in range(ROUNDS):
        await asyncio.gather(
            write_version(first, f"a{round_number}", 2 * round_number + 1),
            write_version(second, f"b{round_number}", 2 * round_number + 2),
        )
        live = (await reader.find_by_source("shared.txt")).document_id
        assert live in (f"a{round_number}", f"b{round_number}")
        assert await surviving_versions(reader, stores) == [live], "the losing and the replaced versions are deleted"
    observer.stop.set()
    await watching
    observer.check()
    assert await reader.check_integrity() == []
    assert await reader.count_chunks() == CHUNKS


async def test_deletes_racing_reingests_leave_one_whole_version_or_none(stores: list[ElasticsearchStore]) -> None:
    writer, deleter, reader = stores
    observer = Observer(reader)
    watching = asyncio.create_task(observer.run())
    outcomes = []
    for round_number in range(ROUNDS):
        await write_version(writer, f"old{round_number}", round_number)
        deleted, _ = await asyncio.gather(
            deleter.delete_document(f"old{round_number}"),
            write_version(writer, f"new{round_number}", 100 + round_number),
        )
        live = await reader.find_by_source("shared.txt")
        outcomes.append((deleted, live.document_id if live else None))
        if deleted:  # the delete came first or second; either way the old version is gone
            assert live is None or live.document_id == f"new{round_number}"
        else:  # the new version replaced the old one before the delete looked
            assert live is not None and live.document_id == f"new{round_number}"
        assert await surviving_versions(reader, stores) == ([live.document_id] if live else [])
        if live is not None:
            assert await deleter.delete_document(live.document_id) is True
    observer.stop.set()
    await watching
    observer.check()
    assert await reader.check_integrity() == []
    print("delete/re-ingest outcomes:", outcomes)


async def test_identical_content_written_twice_at_once_keeps_one_version(stores: list[ElasticsearchStore]) -> None:
    first, second, reader = stores
    await asyncio.gather(write_version(first, "same-a", 1), write_version(second, "same-b", 1))
    live = (await reader.find_by_source("shared.txt")).document_id
    assert await surviving_versions(reader, stores) == [live]
    assert await reader.count_chunks() == CHUNKS

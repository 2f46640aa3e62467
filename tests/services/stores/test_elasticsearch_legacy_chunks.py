"""Chunks written before collections carry no ``collection_id`` and belong to ``default``
(`mapping.collection_clause`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.mapping import source_record_id
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch

DEFAULT_ONLY = SearchFilters(collection_ids=("default",))


@pytest.fixture
async def index_name(es_url: str) -> AsyncIterator[str]:
    name = es_index_name()
    yield name
    cleaner = ElasticsearchStore(es_url, index=name)
    await drop_es_index(cleaner.client, name)
    await cleaner.close()


def opened(es_url: str, name: str) -> ElasticsearchStore:
    return ElasticsearchStore(es_url, index=name, refresh_interval=ES_TEST_REFRESH_INTERVAL)


def search_filters(store: ElasticsearchStore) -> list[Any]:
    """The filter clauses of every search the store sends from now on."""
    sent: list[Any] = []
    search = store.client.search

    async def spied(**kwargs: Any) -> Any:
        body = kwargs.get("query") or kwargs.get("knn") or {}
        sent.append(body.get("bool", {}).get("filter") if "bool" in body else body.get("filter"))
        return await search(**kwargs)

    store.client.search = spied  # type: ignore[method-assign]
    return sent


async def make_legacy(store: ElasticsearchStore, document_id: str) -> None:
    """Rewrite a document's chunks and record as a Carrag from before collections wrote them."""
    await store.client.indices.refresh(index=store.index)
    found = await store.client.search(
        index=store.index, query={"term": {"document_id": document_id}}, size=100, source_excludes=[]
    )
    for hit in found["hits"]["hits"]:
        source = {key: value for key, value in hit["_source"].items() if key != "collection_id"}
        await store.client.index(index=store.index, id=hit["_id"], document=source, refresh="wait_for")
    record_id = source_record_id("legacy.txt")
    state = await store.client.get(index=store.index, id=record_id)
    source = {key: value for key, value in state["_source"].items() if key != "collection_id"}
    await store.client.index(index=store.index, id=record_id, document=source, refresh="wait_for")


async def test_an_index_with_chunks_from_before_collections_still_finds_them(es_url: str, index_name: str) -> None:
    writer = opened(es_url, index_name)
    await writer.open()
    await writer.write_document(
        record("legacy", "legacy.txt", chunks=1), chunks_of("grebe legacy"), unit_vectors(1, 1), IDENTITY
    )
    await make_legacy(writer, "legacy")
    await writer.close()

    reader = opened(es_url, index_name)  # a process opening that index
    await reader.open()
    sent = search_filters(reader)
    for _ in range(2):
        assert [h.chunk.document_id for h in await reader.lexical_search("grebe", 5, DEFAULT_ONLY)] == ["legacy"]
        assert [h.chunk.document_id for h in await reader.vector_search(unit_vectors(1, 1)[0], 5, DEFAULT_ONLY)] == [
            "legacy"
        ]
    assert sent and all({"terms": {"collection_id": ["default"]}} not in clauses for clauses in sent)
    await reader.close()

"""`carrag reindex` keeps collections: the registry moves to the new generation and the same source id
in two collections stays two documents."""

from __future__ import annotations

import dataclasses

import pytest

from carrag.services.models import DEFAULT_COLLECTION, Collection, SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.reindex import reindex
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_elasticsearch_reindex import HashingEmbedder
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch


async def test_reindex_keeps_collections_and_their_documents(es_url: str) -> None:
    store = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await store.open()
    try:
        await store.create_collection(Collection("id-a", "team-a", "2024-05-01T00:00:00+00:00"))
        await store.write_document(
            record("in-default", "notes.md"), chunks_of("kestrel nest"), unit_vectors(1, 1), IDENTITY
        )
        in_a = dataclasses.replace(record("in-a", "notes.md"), collection_id="id-a")
        await store.write_document(in_a, chunks_of("kestrel eggs"), unit_vectors(1, 2), IDENTITY)

        result = await reindex(store, HashingEmbedder(), report=lambda _: None)  # type: ignore[arg-type]
        assert result.documents == 2

        collections = {c.collection_id: (c.name, c.document_count) for c in await store.list_collections()}
        assert collections == {DEFAULT_COLLECTION: (DEFAULT_COLLECTION, 1), "id-a": ("team-a", 1)}
        assert (await store.find_by_source("notes.md", "id-a")).document_id == "in-a"  # type: ignore[union-attr]
        assert (await store.find_by_source("notes.md")).document_id == "in-default"  # type: ignore[union-attr]
        hits = await store.lexical_search("kestrel", 10, SearchFilters(collection_ids=("id-a",)))
        assert [(h.chunk.document_id, h.chunk.collection_id) for h in hits] == [("in-a", "id-a")]
        assert await store.check_integrity() == []
    finally:
        await drop_es_index(store.client, store.index)
        await store.close()

"""An Elasticsearch index made before user metadata and file name filters is adopted: the new fields
(``user_metadata``, ``metadata_pairs``, the ``filename.glob`` multi-field) are added to its mapping,
and documents written after that are found by the new filters."""

from __future__ import annotations

import dataclasses

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.mapping import BASE_PROPERTIES
from tests.conftest import ES_TEST_REFRESH_INTERVAL, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

ADDED = ("user_metadata", "metadata_pairs")


@pytest.mark.elasticsearch
async def test_an_index_from_before_metadata_filters_gets_the_new_fields(es_url: str) -> None:
    raw = AsyncElasticsearch(es_url)
    name = es_index_name()
    before = {key: value for key, value in BASE_PROPERTIES.items() if key not in ADDED}
    before["filename"] = {"type": "keyword", "index": False, "doc_values": False}
    await raw.indices.create(
        index=f"{name}-000001", mappings={"dynamic": "strict", "properties": before}, aliases={name: {}}
    )
    store = ElasticsearchStore(es_url, index=name, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    try:
        await store.open()
        properties = (await raw.indices.get_mapping(index=name))[f"{name}-000001"]["mappings"]["properties"]
        assert properties["filename"]["fields"]["glob"] == {"type": "keyword"}
        assert properties["metadata_pairs"] == {"type": "keyword"}
        document = dataclasses.replace(record("doc", "manuals/truck.pdf"), user_metadata={"team": "a"})
        await store.write_document(document, chunks_of("oil filter words"), unit_vectors(1, 0), IDENTITY)
        for filters in (SearchFilters(filename_glob="*.pdf"), SearchFilters(metadata=(("team", "a"),))):
            assert [h.chunk.document_id for h in await store.lexical_search("oil filter", 5, filters)] == ["doc"]
            assert [h.chunk.document_id for h in await store.vector_search(unit_vectors(1, 0)[0], 5, filters)] == [
                "doc"
            ]
    finally:
        await store.close()
        await raw.indices.delete(index=f"{name}-000001,{name}-originals", ignore_unavailable=True)
        await raw.close()

"""The visibility protocol across processes (`versions.py`): a reader never
returns a version another process replaced or deleted before its search, even while the old chunks
are still in the index; a flip that may have happened is never rolled back; and a replaced version
is gone when its replace returns."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.errors import DependencyUnavailable, UpstreamError
from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.connection import BulkItem
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch


@pytest.fixture
async def reader_and_writer(es_url: str) -> AsyncIterator[tuple[ElasticsearchStore, ElasticsearchStore]]:
    """Two stores on one index, each with its own client and memory, as two API processes."""
    index = es_index_name()
    pair = [ElasticsearchStore(es_url, index=index, refresh_interval=ES_TEST_REFRESH_INTERVAL) for _ in range(2)]
    for store in pair:
        await store.open()
    yield pair[0], pair[1]
    for store in pair:
        await store.close()
    raw = AsyncElasticsearch(es_url)
    await drop_es_index(raw, index)
    await raw.close()


async def write(store: ElasticsearchStore, name: str, *texts: str) -> None:
    await store.write_document(
        record(name, "shared.txt", chunks=len(texts)), chunks_of(*texts), unit_vectors(len(texts), 3), IDENTITY
    )


async def warm(reader: ElasticsearchStore, query: str) -> None:
    """Searches that see the version, as a busy replica's would before the change."""
    for _ in range(3):
        assert await reader.lexical_search(query, 5, SearchFilters())


async def keep_deleted_chunks(store: ElasticsearchStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's deletes do nothing: its replaced chunks stay searchable, as they are for a moment
    while a writer deletes them (or longer, when its deletes fail)."""

    async def nothing(*args: object, **kwargs: object) -> None:
        return None

    monkeypatch.setattr(store.versions, "_delete_ids", nothing)


async def test_a_replace_by_another_process_is_seen_by_a_reader_that_remembers_the_old_version(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query matches only the old version's text, whose chunks stay in the index: the record
    read after the search names v2, so v1's chunks are never returned."""
    reader, writer = reader_and_writer
    await write(writer, "v1", "bittern old text", "bittern more old text")
    await warm(reader, "bittern")
    await keep_deleted_chunks(writer, monkeypatch)
    await write(writer, "v2", "completely different words")
    assert await reader.lexical_search("bittern", 5, SearchFilters()) == []
    assert [h.chunk.document_id for h in await reader.lexical_search("different", 5, SearchFilters())] == ["v2"]


async def test_a_delete_by_another_process_is_seen_by_a_reader_that_remembers_the_version(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = reader_and_writer
    await write(writer, "v1", "plover text", "plover again")
    await warm(reader, "plover")
    await keep_deleted_chunks(writer, monkeypatch)
    assert await writer.delete_document("v1")
    assert await reader.lexical_search("plover", 5, SearchFilters()) == []


async def test_a_store_opens_and_searches_an_index_it_cannot_write(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], es_url: str
) -> None:
    """A write block (reindex's catch-up, a full disk) must not stop a process from opening the index
    to read it. (Found by review.)"""
    _, writer = reader_and_writer
    await write(writer, "v1", "sanderling")
    concrete = next(iter(await writer.client.indices.get_alias(name=writer.index)))
    await writer.client.indices.put_settings(index=concrete, settings={"index.blocks.write": True})
    fresh = ElasticsearchStore(es_url, index=writer.index, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    try:
        await fresh.open()
        assert [h.chunk.document_id for h in await fresh.lexical_search("sanderling", 5, SearchFilters())] == ["v1"]
    finally:
        await writer.client.indices.put_settings(index=concrete, settings={"index.blocks.write": False})
        await fresh.close()


async def test_a_flip_whose_answer_is_lost_is_not_rolled_back(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flip's bulk request reached Elasticsearch but its answer did not come back: the new
    version may be live, so its chunks must not be deleted (the sweep decides later). (Found by review.)"""
    reader, writer = reader_and_writer
    await write(writer, "v1", "stint one", "stint two")
    sent = writer.versions.connection.bulk

    async def answer_lost(operations, **kwargs):  # type: ignore[no-untyped-def]
        result = await sent(operations, **kwargs)
        if kwargs.get("action") == "publishing documents":
            raise UpstreamError("Elasticsearch did not answer in time")
        return result

    monkeypatch.setattr(writer.versions.connection, "bulk", answer_lost)
    with pytest.raises(UpstreamError):
        await write(writer, "v2", "knot one", "knot two")
    monkeypatch.undo()
    assert (await writer.find_by_source("shared.txt")).document_id == "v2", "the flip happened"
    hits = await reader.lexical_search("knot", 5, SearchFilters())
    assert sorted(h.chunk.chunk_index for h in hits) == [0, 1], "whole: nothing of v2 was rolled back"


async def chunk_ids_of(store: ElasticsearchStore, document_id: str) -> list[str]:
    await store.client.indices.refresh(index=store.index)
    response = await store.client.search(
        index=store.index,
        query={"bool": {"filter": [{"term": {"doc_kind": "chunk"}}, {"term": {"document_id": document_id}}]}},
        size=100,
    )
    return sorted(hit["_id"] for hit in response["hits"]["hits"])


async def test_a_replaced_version_is_gone_when_its_replace_returns(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore],
) -> None:
    reader, writer = reader_and_writer
    await write(writer, "v1", "osprey one", "osprey two")
    await write(writer, "v2", "osprey three")
    assert await chunk_ids_of(reader, "v1") == []
    assert await writer.delete_document("v2")
    assert await chunk_ids_of(reader, "v2") == []
    assert await reader.check_integrity() == []


async def test_a_flip_answered_by_a_conflict_to_its_own_retry_is_not_rolled_back(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flip was applied, its answer lost, and the client's retry got 409 (the record had changed:
    by this very flip); then the record could not be read again. v2 may be live (it is), so its
    chunks must stay; the sweep decides later. (Found by review.)"""
    reader, writer = reader_and_writer
    await write(writer, "v1", "stint one", "stint two")
    sent = writer.versions.connection.bulk

    async def retried_into_a_conflict(operations, **kwargs):  # type: ignore[no-untyped-def]
        result = await sent(operations, **kwargs)
        if kwargs.get("action") != "publishing documents":
            return result
        return [BulkItem("index", item.id, 409, "version_conflict_engine_exception") for item in result]

    async def unreadable(*args: object) -> object:
        raise DependencyUnavailable("store", "Elasticsearch did not answer")

    monkeypatch.setattr(writer.versions.connection, "bulk", retried_into_a_conflict)
    real_states = writer.versions.source_states
    calls = 0

    async def second_read_fails(keys):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls > 1:
            return await unreadable()
        return await real_states(keys)

    monkeypatch.setattr(writer.versions, "source_states", second_read_fails)
    with pytest.raises(DependencyUnavailable):
        await write(writer, "v2", "knot one", "knot two")
    monkeypatch.undo()
    assert (await writer.find_by_source("shared.txt")).document_id == "v2", "the flip happened"
    assert len(await chunk_ids_of(writer, "v2")) == 2, "whole: nothing of v2 was rolled back"
    hits = await reader.lexical_search("knot", 5, SearchFilters())
    assert sorted(h.chunk.chunk_index for h in hits) == [0, 1]

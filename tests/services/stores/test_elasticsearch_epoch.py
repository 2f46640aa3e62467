"""The epoch (`versions.py`, `live_filter.py`): a reader that remembers a source's record reads no
record while nothing was retired, and reads them again as soon as another process replaced or
deleted a version, so it never returns a version retired before its search began."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.errors import DependencyUnavailable, UpstreamError
from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore, retirement
from carrag.services.stores.elasticsearch.connection import BulkItem
from carrag.services.stores.elasticsearch.mapping import EPOCH_ID
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
    """Three searches: first sight, then remembered with an epoch, then steady."""
    for _ in range(3):
        await reader.lexical_search(query, 5, SearchFilters())


async def epoch(store: ElasticsearchStore) -> str:
    return (await store.client.get(index=store.index, id=EPOCH_ID))["_source"]["content_hash"]


async def test_a_steady_reader_reads_no_record(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore],
) -> None:
    reader, writer = reader_and_writer
    await write(writer, "v1", "heron one", "heron two")
    await warm(reader, "heron")
    before = reader._live_filter.records_read
    hits = await reader.lexical_search("heron", 5, SearchFilters())
    assert {h.chunk.document_id for h in hits} == {"v1"} and len(hits) == 2
    assert reader._live_filter.records_read == before, "nothing was retired: the epoch alone confirms the hits"


async def keep_deleted_chunks(store: ElasticsearchStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's deletes do nothing: its retired chunks stay searchable, as they are for a moment
    while a writer deletes them (or longer, when its deletes fail)."""

    async def nothing(*args: object, **kwargs: object) -> None:
        return None

    monkeypatch.setattr(store.versions, "_delete_ids", nothing)


async def test_a_replace_by_another_process_is_seen_by_a_reader_that_remembers_the_old_version(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query matches only the old version's text: without the epoch changing when v1 is retired,
    the reader's memory would confirm v1's chunks and return a version already replaced."""
    reader, writer = reader_and_writer
    await write(writer, "v1", "bittern old text", "bittern more old text")
    await warm(reader, "bittern")
    first = await epoch(writer)
    await keep_deleted_chunks(writer, monkeypatch)
    await write(writer, "v2", "completely different words")
    assert await epoch(writer) != first, "retiring v1 wrote a new epoch"
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


async def test_the_old_chunks_stay_and_the_client_is_told_when_the_epoch_cannot_be_written(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the epoch cannot be written, the replaced version's chunks are not deleted (the sweep
    removes them later), so no reader sees that version in part; and the client is not told the
    replace succeeded, since a process that remembers v1 may still return it, whole."""
    reader, writer = reader_and_writer
    await write(writer, "v1", "curlew a", "curlew b")
    await warm(reader, "curlew")

    async def fails() -> bool:
        return False

    monkeypatch.setattr(writer.versions, "new_epoch", fails)
    with pytest.raises(DependencyUnavailable, match="refused to record that its old version is gone"):
        await write(writer, "v2", "godwit a")
    await writer.client.indices.refresh(index=writer.index)
    left = await writer.client.count(
        index=writer.index,
        query={"bool": {"filter": [{"term": {"doc_kind": "chunk"}}, {"term": {"document_id": "v1"}}]}},
    )
    assert left["count"] == 2, "v1's chunks wait for the sweep"
    assert [h.chunk.document_id for h in await writer.lexical_search("godwit", 5, SearchFilters())] == ["v2"]
    with pytest.raises(DependencyUnavailable, match="deleted, but Elasticsearch refused"):
        await writer.delete_document("v2")
    monkeypatch.undo()
    assert await writer.sweep(older_than=0) == 2, "v1 and v2, neither live, go with a new epoch"


async def test_a_new_index_has_an_epoch_of_its_own(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore],
) -> None:
    """After a wipe the epoch is another random value, so memories of the old index never match."""
    _, writer = reader_and_writer
    await write(writer, "v1", "dunlin")
    old = await epoch(writer)
    await writer.wipe()
    await writer.open()
    assert await epoch(writer) != old


async def test_a_store_opens_and_searches_an_index_it_cannot_write(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], es_url: str
) -> None:
    """A write block (reindex's catch-up, a full disk) must not stop a process from opening the index
    to read it; without an epoch document a check just reads every record. (Found by review.)"""
    _, writer = reader_and_writer
    await write(writer, "v1", "sanderling")
    concrete = next(iter(await writer.client.indices.get_alias(name=writer.index)))
    await writer.client.delete(index=concrete, id=EPOCH_ID, refresh=True)
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


async def test_a_steady_search_sends_no_check_after_it(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The epoch read beside the search confirms the hits (`live_filter.py`, ``EpochRead``)."""
    monkeypatch.setattr(retirement, "RETIRE_GRACE_SECONDS", 3.0)
    reader, writer = reader_and_writer
    await write(writer, "v1", "heron one", "heron two")
    await warm(reader, "heron")
    checks = []
    check = reader.versions.live_check_read

    async def counted(*args: object) -> object:
        checks.append(args)
        return await check(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(reader.versions, "live_check_read", counted)
    before = reader._live_filter.unchecked
    lexical = await reader.lexical_search("heron", 5, SearchFilters())
    semantic = await reader.vector_search(unit_vectors(1, 3)[0], 5, SearchFilters())
    assert {h.chunk.document_id for h in (*lexical, *semantic)} == {"v1"}
    assert checks == [] and reader._live_filter.unchecked == before + 2


async def test_a_replace_answered_before_a_search_began_is_seen_while_the_old_chunks_wait_out_the_grace(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """v1's chunks are still in the index (their delete waits 3 s), and the reader remembers v1 with
    the epoch it read: the epoch read beside its next search has moved, so it reads the records."""
    monkeypatch.setattr(retirement, "RETIRE_GRACE_SECONDS", 3.0)
    reader, writer = reader_and_writer
    await write(writer, "v1", "kestrel ancient words", "kestrel more ancient words")
    await warm(reader, "ancient")
    await write(writer, "v2", "kestrel fresh words")
    assert await chunk_ids_of(writer, "v1"), "the retired chunks wait out the grace"
    for _ in range(3):  # only v1's chunks match: without the epoch, memory would confirm them
        assert await reader.lexical_search("ancient", 5, SearchFilters()) == []
        assert {h.chunk.document_id for h in await reader.lexical_search("kestrel", 5, SearchFilters())} == {"v2"}
    deleted = await reader.delete_document("v2")
    assert deleted and await reader.lexical_search("kestrel", 5, SearchFilters()) == []
    assert await writer.lexical_search("kestrel", 5, SearchFilters()) == [], "the other process sees the delete"


async def test_retired_chunks_are_deleted_once_the_grace_is_over_or_when_the_writer_stops(
    reader_and_writer: tuple[ElasticsearchStore, ElasticsearchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retirement, "RETIRE_GRACE_SECONDS", 1.0)
    reader, writer = reader_and_writer
    await write(writer, "v1", "osprey one", "osprey two")
    await write(writer, "v2", "osprey three")
    assert len(await chunk_ids_of(reader, "v1")) == 2
    await asyncio.sleep(1.3)
    assert await chunk_ids_of(reader, "v1") == [], "deleted by the writer's own timer"
    await write(writer, "v3", "osprey four")
    started = time.monotonic()
    await writer.close()
    assert time.monotonic() - started >= 0.9, "a stopping process waits out the grace of what it retired"
    assert await chunk_ids_of(reader, "v2") == []


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

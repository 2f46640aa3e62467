"""Kept originals in the Elasticsearch visibility protocol (issue 14, item 4): a crashed write's
original goes with its abandoned version (sweep), a write too late to flip takes its original back,
a failed removal is retried by the sweep, and racing writers leave exactly the live version's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import OriginalFile
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.versions import PendingWrite
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch


@pytest.fixture
async def es_store(es_url: str) -> AsyncIterator[ElasticsearchStore]:
    store = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await store.open()
    yield store
    raw = AsyncElasticsearch(es_url)
    await drop_es_index(raw, store.index)
    await raw.close()
    await store.close()


def original(text: str) -> OriginalFile:
    return OriginalFile(text.encode() * 200_000, "text/plain", "s.txt")  # two parts or more


async def originals_count(store: ElasticsearchStore) -> int:
    await store.client.indices.refresh(index=store.originals.name)
    return int((await store.client.count(index=store.originals.name))["count"])


async def test_the_sweep_removes_an_abandoned_versions_original(es_store: ElasticsearchStore) -> None:
    await es_store.write_document(
        record("live", "s.txt"), chunks_of("kept"), unit_vectors(1, 0), IDENTITY, original=original("live ")
    )
    dead = PendingWrite(
        record("dead", "s.txt"), chunks_of("lost"), unit_vectors(1, 1), IDENTITY, original=original("x")
    )
    outcomes: list = [None]
    written = await es_store.versions._write_versions([dead], outcomes)
    assert await es_store.versions._write_originals([dead], written, outcomes) == [0]  # then the crash
    assert await es_store.get_original("dead") is None  # never published, never served
    assert "1 kept originals belong to no document" in await es_store.check_integrity()
    assert await es_store.sweep(older_than=0) == 1
    assert await es_store.check_integrity() == []
    assert await (await es_store.get_original("live")).read() == b"live " * 200_000  # type: ignore[union-attr]


async def test_a_write_too_late_to_flip_takes_its_original_back(es_store: ElasticsearchStore) -> None:
    es_store.versions.abandoned_after = 0.0
    with pytest.raises(DependencyUnavailable, match="nothing was stored"):
        await es_store.write_document(
            record("v1", "s.txt"), chunks_of("first"), unit_vectors(1, 0), IDENTITY, original=original("v1 ")
        )
    assert await originals_count(es_store) == 0
    assert await es_store.check_integrity() == []


async def test_a_failed_removal_is_retried_by_the_sweep(es_store: ElasticsearchStore, monkeypatch) -> None:
    await es_store.write_document(
        record("v1", "s.txt"), chunks_of("first"), unit_vectors(1, 0), IDENTITY, original=original("v1 ")
    )
    real_delete = es_store.originals.delete

    async def failing(document_ids):
        return False

    monkeypatch.setattr(es_store.originals, "delete", failing)
    assert await es_store.delete_document("v1") is True
    assert await es_store.get_document("v1") is None and await es_store.get_original("v1") is None
    assert await es_store.check_integrity() == ["1 kept originals belong to no document"]
    monkeypatch.setattr(es_store.originals, "delete", real_delete)
    assert await es_store.sweep(older_than=0) == 1  # the version record was kept for it
    assert await es_store.check_integrity() == [] and await originals_count(es_store) == 0


async def test_racing_writers_leave_only_the_live_versions_original(es_url: str, es_store: ElasticsearchStore) -> None:
    other = ElasticsearchStore(es_url, index=es_store.index, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await other.open()
    try:
        writes = [
            store.write_document(
                record(f"v{n}", "s.txt"),
                chunks_of(f"version {n}"),
                unit_vectors(1, n),
                IDENTITY,
                original=original(f"{n} "),
            )
            for n, store in enumerate([es_store, other] * 4)
        ]
        await asyncio.gather(*writes)
    finally:
        await other.close()
    live = await es_store.find_by_source("s.txt")
    assert live is not None
    n = live.document_id[1:]
    assert await (await es_store.get_original(live.document_id)).read() == f"{n} ".encode() * 200_000  # type: ignore[union-attr]
    assert await es_store.check_integrity() == []
    parts = len(original("0 ").content) // (1024 * 1024) + 1
    assert await originals_count(es_store) == 1 + parts  # one header and its parts: nothing orphaned

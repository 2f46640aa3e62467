"""A job whose process died while writing its document to Elasticsearch (between step 1 of the
write protocol and the flip, carrag/services/stores/elasticsearch/versions.py): another replica
reports the job failed once the lease has run out, its pending version is never visible, and the
version sweep removes it once no writer could still publish it."""

from __future__ import annotations

import asyncio

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.services.jobs import JobManager
from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.jobs import ElasticsearchJobRepository, jobs_index_name
from carrag.services.stores.elasticsearch.versions import PendingWrite
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name, make_settings
from tests.services.jobs.test_leases import dead_job
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch

# every document but the epoch (`versions.py`), which a sweep or a replace writes
NOT_EPOCH = {"bool": {"must_not": {"term": {"doc_kind": "epoch"}}}}


async def test_a_writer_killed_mid_write_leaves_a_failed_job_and_nothing_visible(tmp_path, es_url: str) -> None:
    store = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await store.open()
    settings = make_settings(tmp_path, store="elasticsearch", job_lease_seconds=0.5, job_lease_renew_seconds=0.1)
    other_replica = JobManager(
        settings, ingestion=None, repository=ElasticsearchJobRepository(store.connection, store.index)
    )  # type: ignore[arg-type]
    raw = AsyncElasticsearch(es_url)
    try:
        await store.write_document(
            record("live", "kept.txt", chunks=2), chunks_of("kept", "kept"), unit_vectors(2, 0), IDENTITY
        )
        job = dead_job("indexing", expires_in=0.3, source="lost.txt")
        await other_replica.repository.create(job)
        pending = PendingWrite(
            record("dead", "lost.txt", chunks=2), chunks_of("lost", "lost"), unit_vectors(2, 1), IDENTITY
        )
        outcomes: list = [None]
        assert await store.versions._write_versions([pending], outcomes) == [0], outcomes  # step 1, then the kill

        await asyncio.sleep(0.4)
        settled = await other_replica.get(job["job_id"])
        assert settled.state == "failed" and "either the whole new version or none of it" in settled.error
        assert await store.lexical_search("lost", 5, SearchFilters()) == [], "the pending version is invisible"
        assert await store.find_by_source("lost.txt") is None

        assert await store.sweep(older_than=0) == 1, "the version sweep removes it (ABANDONED_AFTER later)"
        await raw.indices.refresh(index=store.index)
        assert (await raw.count(index=store.index, query=NOT_EPOCH))["count"] == 4, "only kept.txt: 2 chunks, 2 records"
    finally:
        await other_replica.aclose()
        await drop_es_index(raw, store.index)
        await raw.indices.delete(index=jobs_index_name(store.index), ignore_unavailable=True)
        await raw.close()
        await store.close()

"""Two API processes against the 3-node cluster (issue 12, item 5): ingest jobs polled and cancelled
on the other replica, on an index of 3 shards with 1 replica (the jobs index: 1 shard, 1 replica).
The single-node variant, with a SIGKILLed replica, is tests/api/test_elasticsearch_job_replicas.py."""

from __future__ import annotations

import contextlib

import httpx
import pytest
from elasticsearch import AsyncElasticsearch

from carrag.bench.server import server_process
from carrag.services.stores.elasticsearch.jobs import jobs_index_name
from tests.api.test_elasticsearch_job_replicas import embedding_started, poll, sources_visible, submit
from tests.conftest import drop_es_index, es_index_name

pytestmark = [pytest.mark.elasticsearch, pytest.mark.slow]

FINISHED = ("done", "failed", "cancelled")


async def test_jobs_are_polled_and_cancelled_on_the_other_replica(tmp_path, es_cluster) -> None:
    index = es_index_name("carrag_cluster_jobs")
    settings = {
        "STORE": "elasticsearch",
        "ELASTICSEARCH_URL": ",".join(es_cluster.urls),
        "ELASTICSEARCH_INDEX": index,
        "ELASTICSEARCH_SHARDS": "3",
        "ELASTICSEARCH_REPLICAS": "1",
        "ELASTICSEARCH_REFRESH_INTERVAL": "200ms",
        "JOB_LEASE_SECONDS": "4",
        "JOB_LEASE_RENEW_SECONDS": "0.5",
        "EMBED_BATCH_SIZE": "8",
        "LLM": "none",
        "TAGGER": "off",
        "RERANK_ENABLED": "false",
    }
    raw = AsyncElasticsearch(es_cluster.urls)
    try:
        with contextlib.ExitStack() as stack:
            first = stack.enter_context(server_process(tmp_path / "a", **settings))
            second = stack.enter_context(server_process(tmp_path / "b", **settings))
            async with (
                httpx.AsyncClient(base_url=first.url, timeout=60) as a,
                httpx.AsyncClient(base_url=second.url, timeout=60) as b,
            ):
                finished_id, running_id = await submit(a, "finished.md", 30), await submit(b, "running.md", 600)
                finished = await poll(b, finished_id, lambda job: job["state"] in FINISHED)
                assert finished["state"] == "done", finished
                assert "finished.md" in await sources_visible(b)

                await poll(a, running_id, embedding_started)
                response = await a.delete(f"/jobs/{running_id}")
                assert response.status_code == 200 and response.json()["state"] == "cancelled", response.text
                assert (await b.get(f"/jobs/{running_id}")).json()["state"] == "cancelled"
                assert await sources_visible(a) == {"finished.md"}

        jobs_settings = await raw.indices.get_settings(index=jobs_index_name(index))
        assert next(iter(jobs_settings.values()))["settings"]["index"]["number_of_replicas"] == "1"
    finally:
        await drop_es_index(raw, index)
        await raw.indices.delete(index=jobs_index_name(index), ignore_unavailable=True)
        await raw.close()

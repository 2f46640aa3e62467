"""Ingest jobs across API replicas on one Elasticsearch index (issue 12, items 4 and 5): before job
records lived in the store, a job accepted by one replica was 404 on the other.

Three `carrag serve` processes share the index: a job accepted on A is polled to completion on B;
a job running on A is cancelled from B; a job running on C is orphaned by SIGKILLing C, and B then
reports it failed once its lease has run out, with nothing of it visible or left in the index."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import httpx
import pytest
from elasticsearch import AsyncElasticsearch

from carrag.bench.server import server_process
from carrag.services.stores.elasticsearch.jobs import jobs_index_name
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.job_helpers import long_document

pytestmark = [pytest.mark.elasticsearch, pytest.mark.slow]

LEASE_SECONDS = 3.0


async def poll(client: httpx.AsyncClient, job_id: str, done: Callable[[dict], bool], timeout: float = 180.0) -> dict:
    """GET /jobs/{id} on ``client`` until ``done(job)``; the job's JSON."""
    deadline = time.monotonic() + timeout
    while True:
        response = await client.get(f"/jobs/{job_id}")
        assert response.status_code == 200, response.text
        job = response.json()
        if done(job):
            return job
        assert time.monotonic() < deadline, f"job stuck: {job}"
        await asyncio.sleep(0.05)


async def submit(client: httpx.AsyncClient, name: str, paragraphs: int) -> str:
    response = await client.post(
        "/ingest/file", params={"async": "true"}, files={"file": (name, long_document(paragraphs))}, timeout=60
    )
    assert response.status_code == 202, response.text
    return response.json()["job_id"]


def embedding_started(job: dict) -> bool:
    assert job["state"] not in ("done", "failed", "cancelled"), job
    return job["state"] == "embedding" and job["progress"]["done"] >= 16


async def sources_visible(client: httpx.AsyncClient) -> set[str]:
    listing = (await client.get("/documents", params={"limit": 100})).json()
    return {item["source_id"] for item in listing["items"]}


async def test_jobs_are_polled_cancelled_and_failed_across_replicas(tmp_path, es_url: str) -> None:
    index = es_index_name("carrag_job_replicas")
    settings = {
        "STORE": "elasticsearch",
        "ELASTICSEARCH_URL": es_url,
        "ELASTICSEARCH_INDEX": index,
        "ELASTICSEARCH_REFRESH_INTERVAL": ES_TEST_REFRESH_INTERVAL,
        "ELASTICSEARCH_ABANDONED_AFTER_SECONDS": "6",  # the version sweep runs every 3 s
        "JOB_LEASE_SECONDS": str(LEASE_SECONDS),
        "JOB_LEASE_RENEW_SECONDS": "0.5",
        "EMBED_BATCH_SIZE": "8",
        "LLM": "none",
        "TAGGER": "off",
        "RERANK_ENABLED": "false",
    }
    raw = AsyncElasticsearch(es_url)
    try:
        with contextlib.ExitStack() as stack:
            first = stack.enter_context(server_process(tmp_path / "a", **settings))
            second = stack.enter_context(server_process(tmp_path / "b", **settings))
            doomed = stack.enter_context(server_process(tmp_path / "c", **settings))
            async with (
                httpx.AsyncClient(base_url=first.url, timeout=60) as a,
                httpx.AsyncClient(base_url=second.url, timeout=60) as b,
                httpx.AsyncClient(base_url=doomed.url, timeout=60) as c,
            ):
                # 1. accepted on A, polled to completion on B
                finished_id = await submit(a, "finished.md", 40)
                finished = await poll(b, finished_id, lambda job: job["state"] in ("done", "failed", "cancelled"))
                assert finished["state"] == "done", finished
                assert finished["result"]["source_id"] == "finished.md"
                assert "finished.md" in await sources_visible(b)

                # 2. running on A, cancelled from B
                cancelled_id = await submit(a, "cancelled.md", 600)
                await poll(b, cancelled_id, embedding_started)
                response = await b.delete(f"/jobs/{cancelled_id}")
                assert response.status_code == 200, response.text
                assert response.json()["state"] == "cancelled" and response.json()["cancel_requested"]
                on_a = (await a.get(f"/jobs/{cancelled_id}")).json()
                assert on_a["state"] == "cancelled" and on_a["error"] == "cancelled", "A stopped it"
                assert "cancelled.md" not in await sources_visible(a)

                # 3. running on C, C is killed: B reports it failed after the lease
                orphan_id = await submit(c, "orphan.md", 600)
                await poll(b, orphan_id, embedding_started)
                doomed.process.kill()
                doomed.process.wait(timeout=10)
                killed_at = time.monotonic()
                orphan = await poll(
                    b,
                    orphan_id,
                    lambda job: job["state"] in ("failed", "cancelled", "done"),
                    timeout=LEASE_SECONDS * 10,
                )
                assert orphan["state"] == "failed" and "lease expired" in orphan["error"], orphan
                assert time.monotonic() - killed_at >= LEASE_SECONDS - 1.0, "not failed before its lease ran out"
                assert (await a.get(f"/jobs/{orphan_id}")).json()["state"] == "failed", "every replica agrees"
                assert "orphan.md" not in await sources_visible(a)
                hits = (await a.post("/search", json={"question": "maintenance schedule assembly", "top_k": 50})).json()
                assert {hit["source_id"] for hit in hits["results"]} <= {"finished.md"}

                listing = (await a.get("/jobs")).json()
                assert {finished_id, cancelled_id, orphan_id} <= {item["job_id"] for item in listing["items"]}
                assert listing["total"] == 3

                await asyncio.sleep(7)  # past ELASTICSEARCH_ABANDONED_AFTER_SECONDS: the sweep has run

        await raw.indices.refresh(index=index)
        versions = await raw.search(index=index, query={"term": {"doc_kind": "version"}}, size=100)
        assert [hit["_source"]["source_id"] for hit in versions["hits"]["hits"]] == ["finished.md"], (
            "nothing of the cancelled or the orphaned job is left"
        )
        chunks = await raw.count(index=index, query={"term": {"doc_kind": "chunk"}})
        assert chunks["count"] == finished["result"]["chunk_count"]
    finally:
        await drop_es_index(raw, index)
        await raw.indices.delete(index=jobs_index_name(index), ignore_unavailable=True)
        await raw.close()

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx
import pytest

from carrag.api.main import create_app
from tests.conftest import close_container, make_settings, open_container
from tests.job_helpers import long_document, poll_job
from tests.live_server import served_page

NOTE = b"# Notes\n\nThe snapshot retention period is thirty days. Restores need the admin role.\n"
JOB_FIELDS = {
    "job_id",
    "kind",
    "source",
    "state",
    "progress",
    "timings_ms",
    "result",
    "report",  # a sync or crawl job's; null for an ingest
    "error",
    "cancel_requested",
    "created_at",
    "updated_at",
}


async def test_async_file_ingest_answers_202_and_the_job_reports_the_result(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/ingest/file", params={"async": "true"}, files={"file": ("notes.md", NOTE)}, data={"tags": "ops"}
    )
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert accepted == {"job_id": accepted["job_id"], "state": "queued", "status_url": f"/jobs/{accepted['job_id']}"}
    assert response.headers["location"] == accepted["status_url"]

    job = await poll_job(client, accepted["job_id"], {"done", "failed"})
    assert set(job) == JOB_FIELDS
    assert job["state"] == "done" and job["error"] is None
    assert job["kind"] == "file" and job["source"] == "notes.md"
    assert list(job["timings_ms"]) == ["queued", "parsing", "tagging", "chunking", "embedding", "indexing"]
    assert job["progress"] == {"done": job["result"]["chunk_count"], "total": job["result"]["chunk_count"]}
    assert job["result"]["status"] == "ingested" and "ops" in job["result"]["tags"]
    assert job["created_at"] <= job["updated_at"]

    document = await client.get(f"/documents/{job['result']['document_id']}")
    assert document.status_code == 200 and document.json()["source_id"] == "notes.md"

    listing = (await client.get("/jobs")).json()
    assert listing["total"] == 1 and listing["items"][0]["job_id"] == accepted["job_id"]

    again = await client.delete(accepted["status_url"])
    assert again.status_code == 409 and "already finished" in again.json()["detail"]


async def test_validation_before_queuing_still_answers_4xx(client: httpx.AsyncClient) -> None:
    cases = [
        ("/ingest/file", {"files": {"file": ("empty.txt", b"")}}, 400, "empty"),
        ("/ingest/file", {"files": {"file": ("virus.exe", b"MZ")}}, 400, "Unsupported file type"),
        ("/ingest/url", {"json": {"url": "file:///etc/passwd"}}, 400, "http and https"),
        ("/ingest/url", {"json": {"url": "http://127.0.0.1:1/secret"}}, 400, "loopback"),
    ]
    for path, request, status, message in cases:
        response = await client.post(path, params={"async": "true"}, **request)
        assert response.status_code == status, (path, response.text)
        assert message in response.json()["detail"]
    assert (await client.get("/jobs")).json() == {"items": [], "total": 0}


async def test_unknown_job_is_404(client: httpx.AsyncClient) -> None:
    for method in ("GET", "DELETE"):
        response = await client.request(method, "/jobs/no-such-job")
        assert response.status_code == 404
        assert "No ingest job" in response.json()["detail"]


async def test_delete_cancels_mid_embedding_and_nothing_is_stored(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, embed_batch_size=8), embedding_backend)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            accepted = (
                await client.post("/ingest/file?async=true", files={"file": ("big.md", long_document(600))})
            ).json()
            while True:
                job = (await client.get(accepted["status_url"])).json()
                if job["state"] == "embedding" and job["progress"]["done"] >= 8:
                    break
                assert job["state"] not in ("done", "failed"), job
                await asyncio.sleep(0.02)
            assert job["progress"]["done"] < job["progress"]["total"]

            response = await client.delete(accepted["status_url"])

            assert response.status_code == 200
            assert response.json()["state"] == "cancelled" and response.json()["result"] is None
            assert (await client.get(accepted["status_url"])).json()["state"] == "cancelled"
            assert (await client.get("/documents")).json()["total"] == 0
            assert await container.store.count_chunks() == 0
    finally:
        await close_container(container)


async def test_a_full_queue_is_429_and_shutdown_is_503(tmp_path: Path, embedding_backend) -> None:
    settings = make_settings(tmp_path, max_concurrent_ingests=1, ingest_queue_size=0, embed_batch_size=8)
    container = await open_container(settings, embedding_backend)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            first = await client.post("/ingest/file?async=true", files={"file": ("big.md", long_document(300))})
            assert first.status_code == 202
            refused = await client.post("/ingest/file?async=true", files={"file": ("notes.md", NOTE)})
            assert refused.status_code == 429 and "retry shortly" in refused.json()["detail"]
            assert refused.headers["retry-after"] == "1"
            assert (await client.get("/jobs")).json()["total"] == 1

            container.jobs.begin_shutdown(grace=0)
            for params in ({"async": "true"}, {}):
                response = await client.post("/ingest/file", params=params, files={"file": ("notes.md", NOTE)})
                assert response.status_code == 503, response.text
                assert "shutting down" in response.json()["detail"]
            ready = await client.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["reasons"]["service"] == "shutting down"
            await container.jobs.shutdown(grace=0)
            assert (await client.get(first.json()["status_url"])).json()["state"] == "cancelled"
    finally:
        await close_container(container)


@pytest.mark.parametrize("path", ["/jobs", "/jobs/some-id"])
async def test_jobs_need_the_api_key(tmp_path: Path, embedding_backend, path: str) -> None:
    container = await open_container(make_settings(tmp_path, api_keys="sekret"), embedding_backend)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            assert (await client.get(path)).status_code == 401
            authorised = await client.get(path, headers={"Authorization": "Bearer sekret"})
            assert authorised.status_code in (200, 404)
    finally:
        await close_container(container)


PAGE = (
    b"<html><head><title>Tyre pressures</title></head><body><article><h1>Tyre pressures</h1>"
    b"<p>Front tyres take 2.4 bar and rear tyres 2.6 bar when the vehicle is fully loaded. Check them "
    b"monthly, cold, with a calibrated gauge, and before every long journey.</p></article></body></html>"
)


async def test_async_url_ingest_of_a_loopback_page(tmp_path: Path, embedding_backend) -> None:
    site = contextlib.ExitStack()
    url = site.enter_context(served_page(PAGE)) + "/tyres"
    container = await open_container(make_settings(tmp_path, fetch_allowed_hosts="127.0.0.1"), embedding_backend)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            response = await client.post("/ingest/url?async=true", json={"url": url, "tags": ["tyres"]})
            assert response.status_code == 202, response.text
            job = await poll_job(client, response.json()["job_id"], {"done", "failed"})
        assert job["kind"] == "url" and job["source"] == url
        assert job["state"] == "done", job["error"]
        assert job["result"]["source_id"] == url and "tyres" in job["result"]["tags"]
        assert await container.store.find_by_source(url) is not None
    finally:
        site.close()
        await close_container(container)

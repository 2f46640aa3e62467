from __future__ import annotations

from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from carrag.api.main import create_app
from carrag.services.telemetry import NullTelemetry
from tests.conftest import close_container, make_settings, open_container
from tests.job_helpers import poll_job

NOTE = b"# Brakes\n\nReplace the brake fluid every two years. The brake pads wear faster when towing.\n"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a /metrics answer, keyed by (name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(all_samples: dict, name: str, **labels: str) -> float:
    return all_samples.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_cover_requests_stages_embedding_indexing_and_jobs(client: httpx.AsyncClient) -> None:
    ingested = (await client.post("/ingest/file", files={"file": ("brakes.md", NOTE)})).json()
    assert (await client.get(f"/documents/{ingested['document_id']}")).status_code == 200
    assert (await client.get("/documents/no-such-document")).status_code == 404
    assert (await client.post("/search", json={"question": "brake fluid"})).status_code == 200
    assert (await client.post("/query", json={"question": "When is the brake fluid replaced?"})).status_code == 200
    assert (await client.get("/no/such/route")).status_code == 404

    response = await client.get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found = samples(response.text)
    count = "carrag_http_request_duration_seconds_count"
    assert value(found, count, method="POST", route="/ingest/file", status="200") == 1
    # routes are labelled by their template, not the concrete path
    assert value(found, count, method="GET", route="/documents/{document_id}", status="200") == 1
    assert value(found, count, method="GET", route="/documents/{document_id}", status="404") == 1
    assert value(found, count, method="GET", route="unmatched", status="404") == 1
    assert value(found, "carrag_http_requests_in_flight") == 1, "the /metrics request itself"

    stage = "carrag_stage_duration_seconds_count"
    for name in ("parse", "tag", "chunk", "embed", "index"):
        assert value(found, stage, pipeline="ingest", stage=name) == 1, name
    for name in ("embed_query", "retrieve", "fuse", "expand", "total"):
        assert value(found, stage, pipeline="query", stage=name) == 2, name  # /search and /query
    assert value(found, stage, pipeline="query", stage="generate") == 1

    assert value(found, "carrag_chunks_indexed_total") == ingested["chunk_count"]
    assert value(found, "carrag_documents_ingested_total", status="ingested") == 1
    assert value(found, "carrag_embedded_texts_total") >= ingested["chunk_count"] + 1  # chunks + a question
    assert value(found, "carrag_embedding_seconds_total") > 0
    assert value(found, "carrag_ingest_jobs", state="done") == 0


async def test_job_states_are_exported(client: httpx.AsyncClient) -> None:
    accepted = (await client.post("/ingest/file?async=true", files={"file": ("brakes.md", NOTE)})).json()
    await poll_job(client, accepted["job_id"], {"done"})
    found = samples((await client.get("/metrics")).text)
    assert value(found, "carrag_ingest_jobs", state="done") == 1
    assert value(found, "carrag_ingest_jobs_finished_total", state="done") == 1


async def test_store_errors_are_counted(tmp_path: Path, embedding_backend) -> None:
    # A directory where the database file should be: SQLite cannot open it.
    container = await open_container(make_settings(tmp_path, sqlite_path=tmp_path), embedding_backend)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            for _ in range(2):
                response = await client.get("/documents")
                assert response.status_code == 503 and response.json()["detail"].startswith("store unavailable")
            found = samples((await client.get("/metrics")).text)
        assert value(found, "carrag_dependency_errors_total", component="store") == 2
    finally:
        await close_container(container)


async def test_metrics_need_the_api_key_unless_public(tmp_path: Path, embedding_backend) -> None:
    for public, anonymous_status in ((False, 401), (True, 200)):
        settings = make_settings(tmp_path / str(public), api_keys="sekret", metrics_public=public)
        container = await open_container(settings, embedding_backend)
        try:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
            ) as client:
                assert (await client.get("/metrics")).status_code == anonymous_status
                keyed = await client.get("/metrics", headers={"Authorization": "Bearer sekret"})
                assert keyed.status_code == 200 and "carrag_http_requests_in_flight" in keyed.text
        finally:
            await close_container(container)


async def test_an_app_over_a_container_reporting_elsewhere_still_exports_http_metrics(
    tmp_path: Path, embedding_backend
) -> None:
    container = await open_container(make_settings(tmp_path), embedding_backend, telemetry=NullTelemetry())
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            assert (await client.post("/search", json={"question": "brake fluid"})).status_code == 200
            found = samples((await client.get("/metrics")).text)
        count = "carrag_http_request_duration_seconds_count"
        assert value(found, count, method="POST", route="/search", status="200") == 1
        assert value(found, "carrag_stage_duration_seconds_count", pipeline="query", stage="total") == 0
    finally:
        await close_container(container)

"""The API on an Elasticsearch-backed container: ingest → /documents → /search → /query → delete on the
session's real node, the same data giving the same kNN results as SQLite, and an unreachable node
giving 503 JSON (that last one needs no node)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.container import Container
from tests.conftest import (
    ES_TEST_REFRESH_INTERVAL,
    close_container,
    drop_es_index,
    es_index_name,
    make_settings,
    open_container,
)
from tests.live_server import free_port

NOTES = b"# Backups\n\nThe snapshot retention is thirty days. Snapshots run nightly at two in the morning.\n"


@asynccontextmanager
async def api(settings, embedding_backend) -> AsyncIterator[tuple[httpx.AsyncClient, Container]]:
    container = await open_container(settings, embedding_backend)
    app = create_app(container=container)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
            yield client, container
    finally:
        if container.settings.store == "elasticsearch" and not container.startup_errors:
            await drop_es_index(container.store.client, container.settings.elasticsearch_index)  # type: ignore[attr-defined]
        await close_container(container)


@pytest.fixture
def es_settings(tmp_path, es_url: str) -> Callable[..., object]:
    def build(**overrides: object):
        return make_settings(
            tmp_path,
            store="elasticsearch",
            elasticsearch_url=es_url,
            elasticsearch_index=es_index_name("carrag_api"),
            elasticsearch_refresh_interval=ES_TEST_REFRESH_INTERVAL,
            **overrides,
        )

    return build


async def ingest(client: httpx.AsyncClient, name: str, data: bytes, **form: str) -> dict:
    response = await client.post("/ingest/file", files={"file": (name, data)}, data=form)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.elasticsearch
async def test_ingest_search_query_and_delete_on_elasticsearch(
    es_settings, embedding_backend, manual_pdf: bytes
) -> None:
    async with api(es_settings(), embedding_backend) as (client, _):
        manual = await ingest(client, "2019_Ford_F150_Owners_Manual.pdf", manual_pdf, tags="maintenance")
        notes = await ingest(client, "notes.md", NOTES, tags="ops")
        assert manual["status"] == notes["status"] == "ingested" and manual["chunk_count"] >= 2

        listing = (await client.get("/documents")).json()
        assert listing["total"] == 2
        assert [d["document_id"] for d in (await client.get("/documents?tag=maintenance")).json()["items"]] == [
            manual["document_id"]
        ]
        chunks = (await client.get(f"/documents/{manual['document_id']}/chunks")).json()
        assert len(chunks["items"]) == chunks["total"] == manual["chunk_count"]
        assert all(c["vector_dimension"] == 384 for c in chunks["items"])

        found = await client.post("/search", json={"question": "Which oil filter fits the engine?", "explain": True})
        assert found.status_code == 200, found.text
        results = found.json()["results"]
        assert results and results[0]["source_id"] == "2019_Ford_F150_Owners_Manual.pdf"
        assert any(r["explain"]["bm25_rank"] and r["explain"]["knn_rank"] for r in results), "both legs contributed"

        only_md = (await client.post("/search", json={"question": "snapshot retention", "source": "*.md"})).json()
        assert only_md["results"] and {r["source_id"] for r in only_md["results"]} == {"notes.md"}
        tagged = (await client.post("/search", json={"question": "snapshot retention", "tags": ["maintenance"]})).json()
        assert {r["source_id"] for r in tagged["results"]} <= {"2019_Ford_F150_Owners_Manual.pdf"}

        answer = await client.post(
            "/query", json={"question": "How long is the snapshot retention?", "source": "notes.md"}
        )
        assert answer.status_code == 200, answer.text
        assert "thirty days" in answer.json()["answer"]
        assert [s["source_id"] for s in answer.json()["sources"]] == ["notes.md"]

        assert (await ingest(client, "notes.md", NOTES))["status"] == "unchanged"
        changed = await ingest(client, "notes.md", NOTES.replace(b"thirty", b"ninety"))
        assert changed["replaced_document_id"] == notes["document_id"]
        texts = [
            r["text"]
            for r in (
                await client.post("/search", json={"question": "snapshot retention days", "source": "notes.md"})
            ).json()["results"]
        ]
        assert texts and all("ninety" in t and "thirty" not in t for t in texts)

        assert (await client.delete(f"/documents/{manual['document_id']}")).status_code == 200
        assert (await client.get(f"/documents/{manual['document_id']}")).status_code == 404
        gone = await client.post("/search", json={"question": "oil filter engine", "tags": ["maintenance"]})
        assert gone.status_code == 200 and gone.json()["results"] == []

        health = (await client.get("/health")).json()["components"]["store"]
        assert health["status"] == "ok" and health["backend"] == "elasticsearch"


@pytest.mark.elasticsearch
async def test_same_data_gives_the_same_knn_results_as_sqlite(
    es_settings, tmp_path, embedding_backend, manual_pdf: bytes
) -> None:
    questions = ["Which oil filter fits the engine?", "tire pressure", "How do I tow a trailer safely?"]
    results: dict[str, list[list[tuple[str, int, float]]]] = {}
    for name, settings in [("sqlite", make_settings(tmp_path / "sqlite")), ("elasticsearch", es_settings())]:
        async with api(settings, embedding_backend) as (client, _):
            await ingest(client, "manual.pdf", manual_pdf)
            await ingest(client, "notes.md", NOTES)
            results[name] = []
            for question in questions:
                body = {"question": question, "mode": "knn", "top_k": 5, "rerank": False}
                hits = (await client.post("/search", json=body)).json()["results"]
                results[name].append([(h["source_id"], h["chunk_index"], h["score"]) for h in hits])
    for sqlite_hits, es_hits in zip(results["sqlite"], results["elasticsearch"], strict=True):
        assert sqlite_hits, "the question found something"
        assert [h[:2] for h in es_hits] == [h[:2] for h in sqlite_hits]
        assert [h[2] for h in es_hits] == pytest.approx([h[2] for h in sqlite_hits], abs=1e-3)


async def test_unreachable_elasticsearch_gives_503_json_not_tracebacks(
    tmp_path, embedding_backend, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()  # a loopback port nobody listens on
    settings = make_settings(
        tmp_path, store="elasticsearch", elasticsearch_url=f"http://127.0.0.1:{port}", elasticsearch_timeout=5
    )
    with caplog.at_level(logging.ERROR):
        async with api(settings, embedding_backend) as (client, container):
            assert "store" in container.startup_errors
            assert any(
                "store unavailable at startup" in r.getMessage()
                and f"127.0.0.1:{port} is unreachable" in getattr(r, "reason", "")
                for r in caplog.records
            ), "one clear startup line, with the cause"

            health = await client.get("/health")
            assert health.status_code == 200
            store = health.json()["components"]["store"]
            assert store["status"] == "unavailable" and store["backend"] == "elasticsearch"
            assert f"127.0.0.1:{port} is unreachable" in store["detail"]

            requests = [
                client.build_request("POST", "/search", json={"question": "oil filter"}),
                client.build_request("POST", "/query", json={"question": "oil filter"}),
                client.build_request("GET", "/documents"),
                client.build_request("GET", "/documents/some-id"),
                client.build_request("DELETE", "/documents/some-id"),
                client.build_request("POST", "/ingest/file", files={"file": ("notes.md", NOTES)}),
            ]
            for request in requests:
                response = await client.send(request)
                assert response.status_code == 503, (request.url, response.text)
                assert response.headers["content-type"].startswith("application/json")
                assert "Elasticsearch at http://127.0.0.1" in response.json()["detail"], response.text


@pytest.mark.elasticsearch
async def test_originals_and_file_name_listing_on_elasticsearch(
    es_settings, embedding_backend, manual_pdf: bytes
) -> None:
    async with api(es_settings(), embedding_backend) as (client, container):
        manual = await ingest(client, "2019_Ford_F150_Owners_Manual.pdf", manual_pdf)
        first = await ingest(client, "notes.md", NOTES)
        file = await client.get(f"/documents/{manual['document_id']}/file")
        assert file.status_code == 200 and file.content == manual_pdf
        assert file.headers["content-type"] == "application/pdf"
        assert 'filename="2019_Ford_F150_Owners_Manual.pdf"' in file.headers["content-disposition"]

        listed = (await client.get("/documents", params={"filename": "*.MD", "sort": "filename"})).json()
        assert [d["document_id"] for d in listed["items"]] == [first["document_id"]]

        second = await ingest(client, "notes.md", NOTES + b"\nRestores are tested monthly.\n")
        assert (await client.get(f"/documents/{first['document_id']}/file")).status_code == 404
        assert (await client.get(f"/documents/{second['document_id']}/file")).content.endswith(b"monthly.\n")
        assert (await client.delete(f"/documents/{second['document_id']}")).status_code == 200
        assert (await client.get(f"/documents/{second['document_id']}/file")).status_code == 404
        assert await container.store.check_integrity() == []

"""Liveness, readiness and the access log."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from carrag.api.log_config import JsonFormatter
from carrag.api.main import create_app
from tests.conftest import close_container, make_settings, open_container


async def test_live_and_ready_on_a_working_service(client: httpx.AsyncClient) -> None:
    live = await client.get("/health/live")
    assert live.status_code == 200 and live.json() == {"status": "alive"}
    ready = await client.get("/health/ready")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}


async def test_ready_is_503_with_reasons_when_the_store_is_unusable(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(
        make_settings(tmp_path, sqlite_path=tmp_path, api_keys="sekret"), embedding_backend
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            ready = await client.get("/health/ready")  # probes need no key
            live = await client.get("/health/live")
    finally:
        await close_container(container)
    assert ready.status_code == 503
    body = ready.json()
    assert body["status"] == "not_ready" and set(body["reasons"]) == {"store"}
    assert "SQLite" in body["reasons"]["store"] and body["detail"].startswith("Not ready: store:")
    assert live.status_code == 200, "liveness never depends on the store"


async def test_every_request_gets_one_json_access_line_with_its_request_id(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="carrag.access"):
        generated = await client.get("/documents")
        chosen = await client.get("/jobs/missing", headers={"X-Request-ID": "trace-42"})
        probe = await client.get("/health/live")

    assert chosen.headers["x-request-id"] == "trace-42", "a sane client id is echoed"
    assert len(generated.headers["x-request-id"]) == 32, "otherwise one is made"
    lines = [json.loads(JsonFormatter().format(record)) for record in caplog.records if record.name == "carrag.access"]
    assert [(line["method"], line["path"], line["status"]) for line in lines] == [
        ("GET", "/documents", 200),
        ("GET", "/jobs/missing", 404),
        ("GET", "/health/live", 200),
    ]
    assert [line["request_id"] for line in lines] == [
        generated.headers["x-request-id"],
        "trace-42",
        probe.headers["x-request-id"],
    ]
    assert all(line["duration_ms"] >= 0 for line in lines)
    assert lines[1]["route"] == "/jobs/{job_id}" and lines[1]["message"] == "GET /jobs/missing 404"
    assert [line["level"] for line in lines] == ["info", "info", "debug"], "probes are logged at DEBUG"

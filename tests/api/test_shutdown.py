"""Graceful shutdown of a real ``carrag serve`` process: SIGTERM while ingests are in flight.

Either the in-flight ingests finish within SHUTDOWN_GRACE_SECONDS and their documents are stored
whole, or they are cancelled when the grace period ends and nothing of them is stored. Either way
the process exits 0.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from carrag.bench.server import clean_environment
from tests.job_helpers import long_document
from tests.live_server import free_port

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def carrag_serve(
    data_dir: Path, grace: float, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen, str, Path]]:
    port = free_port()
    env = clean_environment()
    env.update(
        {
            "DATA_DIR": str(data_dir),
            "LLM": "none",
            "RERANK_ENABLED": "false",
            "TAGGER": "keywords",
            "LOG_JSON": "true",
            "LOG_LEVEL": "INFO",
            "EMBED_BATCH_SIZE": "8",
            "SHUTDOWN_GRACE_SECONDS": str(grace),
            **(extra_env or {}),
        }
    )
    log_path = data_dir / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "carrag.cli.main", "serve", "--port", str(port)],
            cwd=data_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log_path.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health/live", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "carrag serve did not start"
            time.sleep(0.1)
        yield process, url, log_path
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def wait_for_job(url: str, job_id: str, condition, timeout: float = 120) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        job = httpx.get(f"{url}/jobs/{job_id}").json()
        if condition(job):
            return job
        assert job["state"] not in ("done", "failed", "cancelled"), job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def in_flight(url: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("carrag_http_requests_in_flight "):
            return float(line.split()[1])
    raise AssertionError("no in-flight gauge")


def stored(data_dir: Path) -> tuple[dict[str, int], int]:
    """{source_id: chunk_count} of the stored documents, and the number of chunk rows."""
    connection = sqlite3.connect(data_dir / "carrag.db")
    try:
        documents = dict(connection.execute("SELECT source_id, chunk_count FROM documents").fetchall())
        chunks = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        connection.close()
    return documents, chunks


def test_sigterm_lets_in_flight_ingests_finish_within_the_grace_period(tmp_path: Path) -> None:
    with carrag_serve(tmp_path, grace=120) as (process, url, log_path):
        job = httpx.post(f"{url}/ingest/file?async=true", files={"file": ("job.md", long_document(40))}).json()
        synchronous: dict[str, httpx.Response] = {}
        sender = threading.Thread(
            target=lambda: synchronous.setdefault(
                "response",
                httpx.post(f"{url}/ingest/file", files={"file": ("sync.md", long_document(30)[::-1])}, timeout=120),
            )
        )
        sender.start()
        wait_for_job(url, job["job_id"], lambda j: j["state"] == "embedding")
        deadline = time.monotonic() + 30
        while in_flight(url) < 2:  # this scrape and the synchronous upload
            assert time.monotonic() < deadline
            time.sleep(0.02)

        process.send_signal(signal.SIGTERM)

        assert process.wait(timeout=120) == 0, log_path.read_text()
        sender.join(timeout=30)
    assert synchronous["response"].status_code == 200, synchronous["response"].text
    documents, chunks = stored(tmp_path)
    assert set(documents) == {"job.md", "sync.md"}
    assert chunks == sum(documents.values()) == synchronous["response"].json()["chunk_count"] + documents["job.md"]

    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]  # every line is JSON
    access = [line for line in lines if line["logger"] == "carrag.access"]
    assert {(line["method"], line["path"], line["status"]) for line in access} >= {
        ("POST", "/ingest/file", 202),
        ("POST", "/ingest/file", 200),
    }
    assert all(len(line["request_id"]) == 32 for line in access)
    assert any(line["message"] == "shutting down: waiting for ingest jobs" for line in lines)


def test_sigterm_cancels_what_outlives_the_grace_period_and_stores_nothing(tmp_path: Path) -> None:
    with carrag_serve(tmp_path, grace=0.5) as (process, url, log_path):
        job = httpx.post(f"{url}/ingest/file?async=true", files={"file": ("big.md", long_document(1500))}).json()
        wait_for_job(url, job["job_id"], lambda j: j["state"] == "embedding" and j["progress"]["done"] >= 8)

        process.send_signal(signal.SIGTERM)

        assert process.wait(timeout=120) == 0, log_path.read_text()
    assert stored(tmp_path) == ({}, 0)
    assert "cancelled unfinished ingest jobs" in log_path.read_text()

"""Crash safety: SIGKILL a real server while it embeds large documents, then check the SQLite file
and restart on it. A document is either fully present or absent; a replacement in progress leaves
the old version intact; chunks, FTS rows and vectors all agree."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from carrag.bench.server import server_process
from carrag.services.stores.sqlite import integrity_problems

SETTINGS = {
    "LLM": "none",
    "RERANK_ENABLED": "false",
    "TAGGER": "keywords",
    "EMBED_BATCH_SIZE": "8",
    "JOB_LEASE_SECONDS": "2",
    "JOB_LEASE_RENEW_SECONDS": "0.5",
}
KEPT = b"Kept manual. The cold tire pressure is 35 psi front and rear. Rotate the tyres every 6,000 miles.\n" * 4


def big_document(seed: int, sections: int = 500) -> bytes:
    """Hundreds of distinct chunks, so embedding takes seconds and nothing comes from a cache."""
    return "".join(
        f"Section {seed}.{i}: the wheel nut torque for variant {i * 7 + seed} is {100 + i % 57} Nm; "
        f"check the brake pad wear indicator {i % 13} and the coolant mark {i % 5} before each trip.\n\n"
        for i in range(sections)
    ).encode()


def documents_in(database: Path) -> dict[str, tuple[str, str, int]]:
    """source_id → (document_id, content_hash, chunk_count), read from the file itself."""
    connection = sqlite3.connect(database)
    try:
        rows = connection.execute("SELECT source_id, document_id, content_hash, chunk_count FROM documents").fetchall()
        assert integrity_problems(connection) == []
        chunk_total = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
        fts_total = connection.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
        vectors = connection.execute("SELECT count(*) FROM chunks WHERE length(embedding) = 384 * 4").fetchone()[0]
    finally:
        connection.close()
    assert chunk_total == sum(row[3] for row in rows) == fts_total == vectors
    return {source: (document_id, digest, count) for source, document_id, digest, count in rows}


def wait_until_embedding(client: httpx.Client, job_ids: list[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = [client.get(f"/jobs/{job_id}").json() for job_id in job_ids]
        assert all(job["state"] not in ("done", "failed", "cancelled") for job in jobs), jobs
        if all(job["state"] == "embedding" and job["progress"]["done"] > 0 for job in jobs):
            return
        time.sleep(0.05)
    raise AssertionError(f"the jobs never reached the embedding stage: {jobs}")


@pytest.mark.slow
def test_sigkill_while_embedding_leaves_whole_documents_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    database = data / "carrag.db"
    with server_process(data, **SETTINGS) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        kept = client.post("/ingest/file", files={"file": ("kept.txt", KEPT)})
        assert kept.status_code == 200, kept.text
        kept = kept.json()
        # a new document, and a new version of kept.txt (same source: it would replace the old one)
        new_job = client.post("/ingest/file?async=true", files={"file": ("big.txt", big_document(1))})
        replacing_job = client.post("/ingest/file?async=true", files={"file": ("kept.txt", big_document(2))})
        assert new_job.status_code == replacing_job.status_code == 202
        wait_until_embedding(client, [new_job.json()["job_id"], replacing_job.json()["job_id"]])
        server.process.kill()  # SIGKILL: no shutdown handler runs
        server.process.wait(timeout=10)

    after_crash = documents_in(database)
    assert after_crash == {"kept.txt": (kept["document_id"], after_crash["kept.txt"][1], kept["chunk_count"])}, (
        "only the old, complete kept.txt survives"
    )

    with server_process(data, **SETTINGS) as server, httpx.Client(base_url=server.url, timeout=120) as client:
        listed = client.get("/documents").json()
        assert [item["document_id"] for item in listed["items"]] == [kept["document_id"]]
        chunks = client.get(f"/documents/{kept['document_id']}/chunks").json()
        assert chunks["total"] == len(chunks["items"]) == kept["chunk_count"]
        for job_id in (new_job.json()["job_id"], replacing_job.json()["job_id"]):  # recorded in the file
            deadline = time.monotonic() + 10  # the lease (2 s) may outlast a quick restart
            while (job := client.get(f"/jobs/{job_id}").json())["state"] == "embedding":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert job["state"] == "failed" and "lease expired" in job["error"], "not resumed: failed by its lease"
        hits = client.post("/search", json={"question": "tire pressure psi"}).json()["results"]
        assert hits and hits[0]["document_id"] == kept["document_id"]
        again = client.post("/ingest/file", files={"file": ("big.txt", big_document(1, sections=60))})
        assert again.status_code == 200, again.text

    final = documents_in(database)
    assert set(final) == {"kept.txt", "big.txt"}

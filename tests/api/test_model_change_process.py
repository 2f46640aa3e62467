"""A change of embedding model across real processes (issue 14, item 5): a store filled through the
OpenAI-compatible adapter is served by a ``carrag serve`` started with the packaged MiniLM instead.
The server loads the store's model from its recorded identity and the EMBEDDINGS_* settings to embed
queries, re-embeds on ``POST /admin/reindex``, and no search answers 409 before, during or after; a
restarted server then serves the new vectors with the new model."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http.server
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from carrag.services.embedders.openai_compatible import OpenAICompatibleEmbedder
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.requests import IngestCommand
from tests.api.test_shutdown import carrag_serve
from tests.conftest import close_container, make_settings, open_container

pytestmark = pytest.mark.slow

DIMENSION = 64
DOCUMENTS = {
    "oil.txt": "Change the engine oil every 5,000 miles and replace the oil filter with it.",
    "tyres.txt": "Tyre pressure is 35 psi when cold; check it monthly.",
    "brakes.txt": "Brake pads wear out; replace them when they are thinner than 3 mm.",
}


def word_vector(text: str) -> list[float]:
    row = np.zeros(DIMENSION)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        row[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSION] += 1.0
    row[0] += 1e-3
    return list(row / np.linalg.norm(row))


@contextlib.contextmanager
def embeddings_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback server speaking OpenAI's ``POST /v1/embeddings`` with bag-of-words vectors (the old
    model); yields its base URL and every input it embedded."""
    inputs: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            inputs.extend(texts)
            answer = json.dumps(
                {
                    "object": "list",
                    "model": body["model"],
                    "data": [
                        {"object": "embedding", "index": i, "embedding": word_vector(t)} for i, t in enumerate(texts)
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", inputs
    finally:
        server.shutdown()


def fill_store(data_dir: Path, base_url: str) -> str:
    async def fill() -> str:
        settings = make_settings(data_dir, llm="none")
        backend = OpenAICompatibleEmbedder(base_url, "word-hashing", "k", max_inputs=8)
        container = await open_container(settings, backend, llm=ExtractiveLLM("tests"))
        try:
            for name, text in DOCUMENTS.items():
                await container.ingestion.ingest_text(text, name, IngestCommand())
            identity = await container.store.embedding_identity()
            assert identity is not None
            return identity.model
        finally:
            await close_container(container)
            await backend.aclose()

    return asyncio.run(fill())


def knn(url: str, question: str) -> dict:
    response = httpx.post(f"{url}/search", json={"question": question, "mode": "knn", "top_k": 1}, timeout=60)
    assert response.status_code == 200, response.text  # the 409 model mismatch would fail here
    return response.json()


def test_a_server_started_with_a_new_model_serves_throughout_its_reindex_and_after_a_restart(tmp_path: Path) -> None:
    with embeddings_server() as (base_url, inputs):
        recorded = fill_store(tmp_path, base_url)
        assert recorded.startswith("openai:word-hashing:")
        # the operator switches to the packaged model, keeping the EMBEDDINGS_* settings of the old one
        old_model = {"EMBEDDINGS_BASE_URL": base_url, "EMBEDDINGS_MODEL": "word-hashing", "EMBEDDINGS_API_KEY": "k"}
        with carrag_serve(tmp_path, 5, old_model) as (_, url, log_path):
            seen = len(inputs)
            before = knn(url, "tyre pressure cold")
            assert before["results"][0]["filename"] == "tyres.txt" and before["degraded"] is None
            assert "tyre pressure cold" in inputs[seen:], "the query was embedded by the store's model"
            change = httpx.get(f"{url}/health").json()["components"]["model_change"]
            assert recorded in change["detail"] and "local:all-MiniLM-L6-v2" in change["model"]

            assert httpx.post(f"{url}/admin/reindex").status_code == 202
            answers = [knn(url, "engine oil filter")]
            ingested = httpx.post(
                f"{url}/ingest/file", files={"file": ("horn.txt", b"The horn fuse sits in the cabin fuse box.")}
            )
            assert ingested.status_code == 200, ingested.text
            deadline = time.monotonic() + 120
            while httpx.get(f"{url}/admin/reindex").json()["state"] == "running":
                answers.append(knn(url, "engine oil filter"))
                assert time.monotonic() < deadline, "the reindex did not finish"
            assert httpx.get(f"{url}/admin/reindex").json()["state"] == "done"
            assert all(a["results"][0]["filename"] == "oil.txt" for a in answers)
            seen = len(inputs)
            assert knn(url, "where is the horn fuse")["results"][0]["filename"] == "horn.txt"
            assert len(inputs) == seen, "after the swap the new model embeds the queries"
            assert "model_change" not in httpx.get(f"{url}/health").json()["components"]
            assert "embedding model change pending" in log_path.read_text()

        with carrag_serve(tmp_path, 5, old_model) as (_, url, _log):  # a restart with the new model
            assert knn(url, "how often to change the engine oil")["results"][0]["filename"] == "oil.txt"
            assert "model_change" not in httpx.get(f"{url}/health").json()["components"]

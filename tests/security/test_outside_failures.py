"""Outside services failing: the Ollama embedder or LLM down, hanging or answering 500, and the store
failing. Each failure is a bounded-time 503 with the reason; ingestion stores nothing; and the
service recovers by itself when the dependency returns (no restart)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.container import Container
from carrag.services.errors import DependencyUnavailable
from carrag.services.models import ComponentHealth
from carrag.services.stores.sqlite import SqliteStore
from tests.conftest import close_container, make_settings, open_container
from tests.security.flaky_ollama import MODEL, FlakyOllama

OUTSIDE_TIMEOUT = 1.0  # seconds: OLLAMA_TIMEOUT for these tests


def document(name: str) -> tuple[str, bytes]:
    return (name, f"{name}: the cold tire pressure is 35 psi; change the oil every 7,500 miles. ".encode() * 3)


@pytest.fixture
def ollama() -> Iterator[FlakyOllama]:
    with FlakyOllama() as server:
        yield server


async def serve(container: Container) -> httpx.AsyncClient:
    app = create_app(container=container)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test", timeout=60)


async def shut(
    container: Container, client: httpx.AsyncClient, *, own_embedder: bool = False, own_llm: bool = False
) -> None:
    """Close what this test built (the session-wide local embedder stays open)."""
    await client.aclose()
    if own_embedder:
        await container.embedder.aclose()
    if own_llm:
        await container.llm.aclose()
    await close_container(container)


async def documents_total(client: httpx.AsyncClient) -> int:
    return (await client.get("/documents")).json()["total"]


async def timed_post(client: httpx.AsyncClient, path: str, **kwargs) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await client.post(path, **kwargs)
    return response, time.monotonic() - started


async def test_embedder_down_hanging_failing_then_back(tmp_path, ollama: FlakyOllama) -> None:
    settings = make_settings(
        tmp_path,
        embedder="ollama",
        ollama_base_url=ollama.url,
        ollama_embed_model=MODEL,
        ollama_timeout=OUTSIDE_TIMEOUT,
        embed_timeout=3.0,
        embed_retries=1,
        tagger="keywords",
    )
    container = await open_container(settings, None)
    client = await serve(container)

    # down: connection refused
    response, took = await timed_post(client, "/ingest/file", files={"file": document("down.txt")})
    assert response.status_code == 503, response.text
    assert "embedder unavailable" in response.json()["detail"] and "cannot reach Ollama" in response.json()["detail"]
    assert response.headers["retry-after"]
    assert took < 5
    assert (await client.post("/search", json={"question": "tire pressure"})).status_code == 503
    health = (await client.get("/health")).json()
    assert health["components"]["embedder"]["status"] == "unavailable" and health["status"] == "unavailable"
    assert (await client.get("/health/ready")).status_code == 503
    assert await documents_total(client) == 0

    # back: the same running service works again
    ollama.start()
    assert (await client.post("/ingest/file", files={"file": document("back.txt")})).status_code == 200
    found = await client.post("/search", json={"question": "tire pressure", "rerank": False})
    assert found.status_code == 200 and found.json()["results"]
    assert (await client.get("/health/ready")).status_code == 200

    # persistent 500s: retried (EMBED_RETRIES = 1), then 503 with Ollama's message
    ollama.mode = "error"
    before = ollama.requests.count("POST /api/embed")
    response = await client.post("/ingest/file", files={"file": document("errors.txt")})
    assert response.status_code == 503
    assert "Ollama error 500: server overloaded" in response.json()["detail"]
    assert ollama.requests.count("POST /api/embed") - before == 2, "one try and one retry"

    # a single 500 is absorbed by the retry with backoff
    ollama.mode = "ok"
    ollama.fail_next = 1
    assert (await client.post("/ingest/file", files={"file": document("errors.txt")})).status_code == 200

    # hanging: every attempt is cut at OLLAMA_TIMEOUT, so the client waits a bounded time
    ollama.mode = "hang"
    response, took = await timed_post(client, "/ingest/file", files={"file": document("hang.txt")})
    assert response.status_code == 503
    assert "timed out" in response.json()["detail"]
    assert took < 2 * OUTSIDE_TIMEOUT + 3
    ollama.mode = "ok"
    ollama.stop()
    ollama.start()
    assert (await client.post("/ingest/file", files={"file": document("hang.txt")})).status_code == 200

    assert await documents_total(client) == 3
    assert await container.store.check_integrity() == []
    await shut(container, client, own_embedder=True)


async def test_llm_down_hanging_failing_then_back(tmp_path, ollama: FlakyOllama, embedding_backend) -> None:
    settings = make_settings(
        tmp_path,
        llm="ollama",
        ollama_base_url=ollama.url,
        ollama_llm_model=MODEL,
        ollama_timeout=OUTSIDE_TIMEOUT,
        tagger="auto",
        tagging_timeout=OUTSIDE_TIMEOUT,
        llm_timeout=5.0,
    )
    container = await open_container(settings, embedding_backend, llm=None)
    client = await serve(container)

    # the LLM is down: ingestion still works (without auto tags), search works
    ingested = await client.post("/ingest/file", files={"file": document("manual.txt")})
    assert ingested.status_code == 200, ingested.text
    assert (await client.post("/search", json={"question": "tire pressure"})).status_code == 200
    response, took = await timed_post(client, "/query", json={"question": "What is the tire pressure?"})
    assert response.status_code == 503
    assert "llm unavailable" in response.json()["detail"] and "cannot reach Ollama" in response.json()["detail"]
    assert took < 5
    stream = await client.post("/query/stream", json={"question": "What is the tire pressure?"})
    assert stream.status_code == 200, "sources were already sent when generation failed"
    assert "event: sources" in stream.text and "event: error" in stream.text and "cannot reach Ollama" in stream.text
    health = (await client.get("/health")).json()
    assert health["components"]["llm"]["status"] == "unavailable" and health["status"] == "degraded"
    assert (await client.get("/health/ready")).status_code == 200, "the LLM is not needed to be ready"

    ollama.start()
    answer = await client.post("/query", json={"question": "What is the tire pressure?", "answer_mode": "generate"})
    assert answer.status_code == 200 and answer.json()["answer"] and answer.json()["model"] == MODEL

    ollama.mode = "error"
    response = await client.post("/query", json={"question": "What is the tire pressure?"})
    assert response.status_code == 503 and "Ollama error 500" in response.json()["detail"]

    ollama.mode = "hang"
    response, took = await timed_post(client, "/query", json={"question": "What is the tire pressure?"})
    assert response.status_code == 503 and "timed out" in response.json()["detail"]
    assert took < OUTSIDE_TIMEOUT + 4

    ollama.mode = "ok"
    ollama.stop()
    ollama.start()
    assert (await client.post("/query", json={"question": "What is the tire pressure?"})).status_code == 200
    await shut(container, client, own_llm=True)


async def test_full_disk_aborts_the_write_and_recovers(tmp_path, embedding_backend) -> None:
    """SQLite's own "database or disk is full", produced by capping the database's page count on
    the store's writer connection."""
    container = await open_container(make_settings(tmp_path), embedding_backend)
    client = await serve(container)
    assert (await client.post("/ingest/file", files={"file": document("first.txt")})).status_code == 200
    store = container.store
    assert isinstance(store, SqliteStore)
    pages = await store._write(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
    await store._write(lambda c: c.execute(f"PRAGMA max_page_count = {pages}"))

    big = ("big.txt", b"".join(f"Section {i}: torque the wheel nuts to {i} Nm. ".encode() * 4 for i in range(150)))
    response = await client.post("/ingest/file", files={"file": big})
    assert response.status_code == 503, response.text
    assert "store unavailable" in response.json()["detail"] and "full" in response.json()["detail"]
    assert await documents_total(client) == 1
    assert await store.check_integrity() == []
    assert (await client.post("/search", json={"question": "tire pressure"})).status_code == 200, "reads still work"

    await store._write(lambda c: c.execute("PRAGMA max_page_count = 1073741823"))
    assert (await client.post("/ingest/file", files={"file": big})).status_code == 200
    assert await store.check_integrity() == []
    await shut(container, client)


class SwitchableStore:
    """A real SQLite store behind a switch: while ``down``, every call fails the way an unreachable
    store does (DependencyUnavailable), as a lost Elasticsearch connection would."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.down = False
        self.backend = inner.backend

    def __getattr__(self, name: str):
        attribute = getattr(self.inner, name)
        if not callable(attribute) or name in ("open", "close"):
            return attribute

        async def call(*args, **kwargs):
            if self.down:
                raise DependencyUnavailable("store", "connection refused (switched off by the test)")
            return await attribute(*args, **kwargs)

        return call

    async def health(self) -> ComponentHealth:
        if self.down:
            return ComponentHealth("store", "unavailable", "sqlite", None, "switched off by the test")
        return await self.inner.health()


async def test_store_down_is_503_everywhere_then_recovers(tmp_path, embedding_backend) -> None:
    settings = make_settings(tmp_path)
    store = SwitchableStore(SqliteStore(settings.resolved_sqlite_path))
    container = await open_container(settings, embedding_backend, store=store)
    client = await serve(container)
    assert (await client.post("/ingest/file", files={"file": document("kept.txt")})).status_code == 200

    store.down = True
    for method, path, kwargs in [
        ("POST", "/ingest/file", {"files": {"file": document("lost.txt")}}),
        ("POST", "/search", {"json": {"question": "tire pressure"}}),
        ("POST", "/query", {"json": {"question": "tire pressure"}}),
        ("POST", "/query/stream", {"json": {"question": "tire pressure"}}),
        ("GET", "/documents", {}),
    ]:
        response = await client.request(method, path, **kwargs)
        assert response.status_code == 503, (path, response.text)
        assert "store unavailable" in response.json()["detail"]
    assert (await client.get("/health")).json()["components"]["store"]["status"] == "unavailable"
    assert (await client.get("/health/ready")).status_code == 503

    store.down = False
    assert await documents_total(client) == 1
    assert (await client.post("/ingest/file", files={"file": document("lost.txt")})).status_code == 200
    assert (await client.post("/search", json={"question": "tire pressure"})).status_code == 200
    assert await store.inner.check_integrity() == []
    await shut(container, client)


async def test_a_slow_llm_gets_a_short_queue_and_clean_429s(tmp_path, ollama: FlakyOllama, embedding_backend) -> None:
    """One generation at a time and one waiting (MAX_CONCURRENT_GENERATIONS, GENERATION_QUEUE_SIZE):
    further questions are refused at once with 429 instead of waiting until LLM_TIMEOUT."""
    settings = make_settings(
        tmp_path,
        llm="ollama",
        ollama_base_url=ollama.url,
        ollama_llm_model=MODEL,
        ollama_timeout=OUTSIDE_TIMEOUT,
        tagger="keywords",
        max_concurrent_generations=1,
        generation_queue_size=1,
    )
    container = await open_container(settings, embedding_backend, llm=None)
    client = await serve(container)
    assert (await client.post("/ingest/file", files={"file": document("manual.txt")})).status_code == 200
    ollama.start()
    ollama.mode = "hang"

    async def ask(route: str) -> tuple[str, int, float]:
        response, took = await timed_post(client, route, json={"question": "What is the tire pressure?"})
        return route, response.status_code, took

    answers = await asyncio.gather(ask("/query"), ask("/query/stream"), ask("/query"), ask("/query/stream"))
    refused = [took for _, status, took in answers if status == 429]
    assert len(refused) == 2, answers
    assert max(refused) < OUTSIDE_TIMEOUT, "refused at once, not after waiting"
    for route, status, _ in answers:
        if status != 429:  # admitted, then the hanging LLM timed out: 503, or an error event once streaming
            assert status == (503 if route == "/query" else 200), answers

    ollama.mode = "ok"
    assert (await client.post("/query", json={"question": "What is the tire pressure?"})).status_code == 200
    assert container.answers.generation.queued == 0
    await shut(container, client, own_llm=True)

"""The OpenAI-compatible embedder against responses recorded from a real server (llama-cpp-python's
``llama_cpp.server`` with SmolLM2, tests/fixtures/openai_embeddings/README.md), replayed through
``httpx.MockTransport``. Statuses that server never answers (404 model, 429) are built in the test
from OpenAI's documented error shape and say so."""

from __future__ import annotations

import hashlib
import json

import httpx
import numpy as np
import pytest

from carrag.services.container import build_embedding_backend
from carrag.services.embedders.openai_compatible import DEFAULT_OPENAI_EMBEDDINGS_URL, OpenAICompatibleEmbedder
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import NotRetryable
from carrag.services.settings import Settings
from tests.openai_embeddings_replay import (
    RECORDED_BASE_URL,
    RECORDED_KEY,
    RECORDED_MODEL,
    OpenAIEmbeddingsReplay,
    recorded_body,
    recording,
)

DOCUMENTS = recording("embed_documents")["request"]["json"]["input"]
QUERY = recording("embed_query")["request"]["json"]["input"][0]


def recorded_vectors(name: str) -> np.ndarray:
    rows = [item["embedding"] for item in sorted(recorded_body(name)["data"], key=lambda item: item["index"])]
    vectors = np.asarray(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def embedder(transport: httpx.AsyncBaseTransport, **options) -> OpenAICompatibleEmbedder:
    options = {"backoff": 0.0} | options
    return OpenAICompatibleEmbedder(
        RECORDED_BASE_URL, options.pop("model", RECORDED_MODEL), options.pop("key", RECORDED_KEY),
        transport=transport, **options,
    )  # fmt: skip


async def test_documents_and_query_match_the_recorded_vectors() -> None:
    replay = OpenAIEmbeddingsReplay()
    client = embedder(replay.transport())
    documents = await client.embed(DOCUMENTS, "document")
    query = await client.embed([QUERY], "query")
    await client.aclose()
    assert documents.shape == (3, 576) and documents.dtype == np.float32
    assert np.allclose(documents, recorded_vectors("embed_documents"), atol=1e-6)
    assert np.allclose(query, recorded_vectors("embed_query"), atol=1e-6)
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert replay.requests[0] == (
        "/v1/embeddings",
        {"model": RECORDED_MODEL, "input": DOCUMENTS, "encoding_format": "float"},
    )


async def test_identity_names_the_endpoint_and_the_service_records_the_dimension() -> None:
    service = EmbeddingService(embedder(OpenAIEmbeddingsReplay().transport()))
    identity = await service.embedding_identity()
    url_hash = hashlib.sha256(RECORDED_BASE_URL.encode()).hexdigest()[:8]
    assert identity.model == f"openai:{RECORDED_MODEL}:{url_hash}" and identity.dimension == 576
    hosted = OpenAICompatibleEmbedder(DEFAULT_OPENAI_EMBEDDINGS_URL + "/", "text-embedding-3-small")
    assert hosted.identity == "openai:text-embedding-3-small", "OpenAI's own endpoint needs no hash"
    await hosted.aclose()
    await service.aclose()


async def test_batches_are_split_and_put_back_in_input_order() -> None:
    """The recorded vectors, served out of order and two texts per request: answers are placed by ``index``."""
    by_text = dict(zip(DOCUMENTS, recorded_body("embed_documents")["data"], strict=True))
    requests: list[list[str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        inputs = json.loads(request.content)["input"]
        requests.append(inputs)
        data = [
            {"object": "embedding", "index": i, "embedding": by_text[text]["embedding"]}
            for i, text in enumerate(inputs)
        ]
        return httpx.Response(200, json={"object": "list", "data": list(reversed(data)), "model": RECORDED_MODEL})

    client = embedder(httpx.MockTransport(answer), max_inputs=2)
    vectors = await client.embed(DOCUMENTS, "document")
    await client.aclose()
    assert requests == [DOCUMENTS[:2], DOCUMENTS[2:]]
    assert np.allclose(vectors, recorded_vectors("embed_documents"), atol=1e-6)


async def test_a_refused_key_fails_at_once_naming_the_setting() -> None:
    replay = OpenAIEmbeddingsReplay()
    service = EmbeddingService(embedder(replay.transport(), key="wrong"), retries=3, backoff=0)
    with pytest.raises(NotRetryable, match=r"refused the key \(401: Invalid API key\); check EMBEDDINGS_API_KEY"):
        await service.embed_query(QUERY)
    assert len(replay.requests) == 1, "neither the adapter nor the service retries a refused key"
    health = await service.health()
    assert health.status == "unavailable" and "EMBEDDINGS_API_KEY" in (health.detail or "")
    await service.aclose()


async def test_a_server_error_is_retried_then_reported_with_the_servers_message() -> None:
    replay = OpenAIEmbeddingsReplay()
    client = embedder(replay.transport(), retries=2)
    payload = recording("error_bad_request")["request"]["json"]  # only a malformed body makes this server fail
    with pytest.raises(NotRetryable, match=r"answered 500 after 3 attempts: 2 validation errors"):
        await client._post_with_retries(payload)
    assert len(replay.requests) == 3
    await client.aclose()


async def test_rate_limits_are_waited_out_honouring_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """429 with OpenAI's documented error body (llama.cpp's server never rate-limits), then the recording."""
    replay = OpenAIEmbeddingsReplay()
    limited = 2
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal limited
        if limited:
            limited -= 1
            body = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
            return httpx.Response(429, json=body, headers={"retry-after": "7"})
        return replay.handle(request)

    monkeypatch.setattr("carrag.services.embedders.openai_compatible.asyncio.sleep", no_sleep)
    client = embedder(httpx.MockTransport(answer), retries=3, max_retry_wait=5)
    vectors = await client.embed([QUERY], "query")
    await client.aclose()
    assert waits == [5, 5], "Retry-After, capped at max_retry_wait"
    assert np.allclose(vectors, recorded_vectors("embed_query"), atol=1e-6)


async def test_an_unknown_model_names_the_settings_to_check() -> None:
    """OpenAI answers 404 ``model_not_found`` (llama.cpp's server serves any name with its one model)."""

    def answer(request: httpx.Request) -> httpx.Response:
        message = "The model `text-embedding-4` does not exist or you do not have access to it."
        return httpx.Response(404, json={"error": {"message": message, "type": "invalid_request_error"}})

    client = embedder(httpx.MockTransport(answer), model="text-embedding-4")
    with pytest.raises(NotRetryable, match=r"no embeddings model 'text-embedding-4'.*check EMBEDDINGS_MODEL"):
        await client.embed(["a"], "document")
    await client.aclose()


async def test_per_token_vectors_are_an_error_not_an_embedding() -> None:
    """Recorded from the same server without pooling: one vector per token."""
    replay = OpenAIEmbeddingsReplay(names=("embed_unpooled",))
    client = embedder(replay.transport())
    with pytest.raises(NotRetryable, match="one vector per token"):
        await client.embed(["Oil change."], "document")
    await client.aclose()


async def test_health_checks_the_model_is_listed() -> None:
    replay = OpenAIEmbeddingsReplay()
    ok = embedder(replay.transport())
    assert (await ok.health()).status == "ok"
    other = embedder(replay.transport(), model="text-embedding-3-large")
    health = await other.health()
    assert health.status == "unavailable" and "EMBEDDINGS_MODEL" in (health.detail or "")
    await ok.aclose()
    await other.aclose()


async def test_unreachable_server_is_unavailable_after_retries() -> None:
    client = OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "m", timeout=2, retries=1, backoff=0)
    with pytest.raises(NotRetryable, match="cannot reach http://127.0.0.1:9/v1"):
        await client.embed(["a"], "document")
    assert (await client.health()).status == "unavailable"
    await client.aclose()


def test_embedder_openai_is_built_from_its_own_settings() -> None:
    settings = Settings(
        _env_file=None,
        embedder="openai",
        embeddings_base_url="http://127.0.0.1:8080/v1",
        embeddings_api_key="embed-key",
        embeddings_model="bge-small",
        embeddings_dimensions=256,
        openai_api_key="llm-key",
    )
    backend = build_embedding_backend(settings)
    assert isinstance(backend, OpenAICompatibleEmbedder)
    assert backend.model == "bge-small" and backend.dimensions == 256
    assert backend._client.headers["authorization"] == "Bearer embed-key", "the embeddings key, not the LLM's"
    assert backend.identity.startswith("openai:bge-small:")
    assert "embed-key" not in repr(settings), "the key is a secret"

"""The Ollama embedder against a loopback server replaying recorded Ollama responses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from carrag.services.embedders.ollama import OllamaEmbedder
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import DependencyUnavailable
from tests.ollama_replay import MISSING_MODEL, RECORDINGS, OllamaReplay


@pytest.fixture
def replay():
    with OllamaReplay() as server:
        yield server


async def test_embed_batch_matches_recording(replay: OllamaReplay) -> None:
    embedder = OllamaEmbedder(replay.url, "smollm2")
    vectors = await embedder.embed(["first text", "second text"], "document")
    recorded = np.asarray(json.loads((RECORDINGS / "embed_batch.json").read_text())["embeddings"], dtype=np.float32)
    expected = recorded / np.linalg.norm(recorded, axis=1, keepdims=True)
    assert vectors.shape == recorded.shape
    assert np.allclose(vectors, expected, atol=1e-6)
    method, path, payload = replay.requests[-1]
    assert (method, path) == ("POST", "/api/embed")
    assert payload == {"model": "smollm2", "input": ["first text", "second text"]}, "no prefixes for non-nomic models"
    await embedder.aclose()


async def test_nomic_models_get_task_prefixes(replay: OllamaReplay) -> None:
    embedder = OllamaEmbedder(replay.url, "nomic-embed-text")
    await embedder.embed(["chunk a", "chunk b"], "document")
    assert replay.requests[-1][2]["input"] == ["search_document: chunk a", "search_document: chunk b"]
    # the recording holds two vectors, so a query is checked through the same two-input call
    await embedder.embed(["what is a?", "what is b?"], "query")
    assert replay.requests[-1][2]["input"] == ["search_query: what is a?", "search_query: what is b?"]
    await embedder.aclose()


async def test_missing_model_is_a_clear_error(replay: OllamaReplay) -> None:
    embedder = OllamaEmbedder(replay.url, MISSING_MODEL)
    with pytest.raises(DependencyUnavailable, match='model "no-such-model" not found'):
        await embedder.embed(["a", "b"], "document")
    await embedder.aclose()


async def test_unreachable_server_is_unavailable() -> None:
    embedder = OllamaEmbedder("http://127.0.0.1:9", "nomic-embed-text", timeout=2)
    with pytest.raises(DependencyUnavailable, match="cannot reach Ollama"):
        await embedder.embed(["a"], "document")
    health = await embedder.health()
    assert health.status == "unavailable"
    await embedder.aclose()


async def test_health_reports_pulled_models(replay: OllamaReplay) -> None:
    assert (await OllamaEmbedder(replay.url, "smollm2").health()).status == "ok"
    missing = await OllamaEmbedder(replay.url, "nomic-embed-text").health()
    assert missing.status == "unavailable" and "ollama pull nomic-embed-text" in missing.detail


async def test_service_sends_batches_of_32() -> None:
    sizes: list[int] = []

    class CountingBackend:
        provider, model, identity = "test", "counting", "test:counting"

        async def embed(self, texts, kind):
            sizes.append(len(texts))
            return np.ones((len(texts), 4), dtype=np.float32)

    service = EmbeddingService(CountingBackend(), batch_size=32)  # type: ignore[arg-type]
    vectors = await service.embed_documents([f"text {i}" for i in range(70)])
    assert sizes == [32, 32, 6] and vectors.shape == (70, 4)


async def test_service_retries_a_failing_batch(replay: OllamaReplay) -> None:
    replay.fail_next = 2
    service = EmbeddingService(OllamaEmbedder(replay.url, "smollm2"), retries=3, backoff=0.01)
    vectors = await service.embed_documents(["first text", "second text"])
    assert vectors.shape[0] == 2
    assert [r[1] for r in replay.requests].count("/api/embed") == 3


async def test_service_gives_up_after_retries(replay: OllamaReplay) -> None:
    replay.fail_next = 10
    service = EmbeddingService(OllamaEmbedder(replay.url, "smollm2"), retries=2, backoff=0.01)
    with pytest.raises(DependencyUnavailable):
        await service.embed_documents(["first text", "second text"])
    assert [r[1] for r in replay.requests].count("/api/embed") == 3

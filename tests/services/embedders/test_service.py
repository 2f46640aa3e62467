from __future__ import annotations

import numpy as np

from carrag.services.embedders.service import EmbeddingCache, EmbeddingService


class RecordingBackend:
    provider, model, identity = "test", "recording", "test:recording"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts, kind):
        self.calls.append(list(texts))
        return np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32)


async def test_repeated_texts_are_embedded_once() -> None:
    backend = RecordingBackend()
    service = EmbeddingService(backend, batch_size=32, cache_size=100)  # type: ignore[arg-type]
    first = await service.embed_documents(["a", "bb", "a", "ccc"])
    assert backend.calls == [["a", "bb", "ccc"]]
    assert np.array_equal(first[0], first[2])
    await service.embed_documents(["bb", "dddd"])
    assert backend.calls[-1] == ["dddd"], "cached texts are not sent again"
    assert service.cache.hits >= 1


async def test_query_and_document_are_cached_apart() -> None:
    backend = RecordingBackend()
    service = EmbeddingService(backend, cache_size=100)  # type: ignore[arg-type]
    await service.embed_documents(["same"])
    await service.embed_query("same")
    assert len(backend.calls) == 2


def test_lru_evicts_oldest() -> None:
    cache = EmbeddingCache(2)
    for text in ("a", "b", "c"):
        cache.put("document", text, np.zeros(1))
    assert cache.get("document", "a") is None and len(cache) == 2


async def test_progress_is_reported() -> None:
    seen: list[tuple[int, int]] = []
    service = EmbeddingService(RecordingBackend(), batch_size=2)  # type: ignore[arg-type]
    await service.embed_documents(["a", "b", "c"], progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (3, 3) and seen[0] == (0, 3)

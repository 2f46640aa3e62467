"""The embedding-model check of a search runs beside its legs, and still guards every result."""

from __future__ import annotations

import asyncio

import pytest

from carrag.services.container import Container
from carrag.services.errors import EmbeddingModelMismatch, UpstreamError
from carrag.services.models import EmbeddingIdentity
from carrag.services.requests import IngestCommand, SearchQuery

TEXT = b"Change the engine oil every 10,000 km. The oil filter goes with it."


async def other_model(container: Container) -> EmbeddingIdentity:
    ours = await container.embedder.embedding_identity()
    return EmbeddingIdentity("another:model", ours.dimension)


async def test_the_legs_do_not_wait_for_the_model_check(container: Container, monkeypatch) -> None:
    await container.ingestion.ingest_file(TEXT, "oil.txt", IngestCommand())
    store = container.store
    events: list[str] = []
    stored_identity, lexical_search = store.embedding_identity, store.lexical_search

    async def slow_identity() -> EmbeddingIdentity | None:
        events.append("model check asked")
        await asyncio.sleep(0.3)
        events.append("model check answered")
        return await stored_identity()

    async def traced_lexical(*args, **kwargs):
        events.append("bm25 leg sent")
        return await lexical_search(*args, **kwargs)

    monkeypatch.setattr(store, "embedding_identity", slow_identity)
    monkeypatch.setattr(store, "lexical_search", traced_lexical)
    outcome = await container.search.search(SearchQuery("engine oil", top_k=2, rerank=False))
    assert outcome.hits
    assert events.index("bm25 leg sent") < events.index("model check answered"), events


async def test_a_store_of_another_model_fails_the_search(container: Container, monkeypatch) -> None:
    await container.ingestion.ingest_file(TEXT, "oil.txt", IngestCommand())
    foreign = await other_model(container)

    async def identity() -> EmbeddingIdentity:
        await asyncio.sleep(0.05)  # answers after the legs: their results must not be returned
        return foreign

    monkeypatch.setattr(container.store, "embedding_identity", identity)
    with pytest.raises(EmbeddingModelMismatch, match="another:model"):
        await container.search.search(SearchQuery("engine oil", top_k=2, rerank=False))


async def test_a_model_mismatch_is_reported_rather_than_the_leg_it_broke(container: Container, monkeypatch) -> None:
    await container.ingestion.ingest_file(TEXT, "oil.txt", IngestCommand())
    foreign = await other_model(container)

    async def identity() -> EmbeddingIdentity:
        await asyncio.sleep(0.05)
        return foreign

    async def broken_leg(*args, **kwargs):
        raise UpstreamError("a vector of the wrong model")

    monkeypatch.setattr(container.store, "embedding_identity", identity)
    monkeypatch.setattr(container.store, "vector_search", broken_leg)
    with pytest.raises(EmbeddingModelMismatch):
        await container.search.search(SearchQuery("engine oil", top_k=2, rerank=False))

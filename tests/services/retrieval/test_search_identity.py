"""The embedding-model check of a search runs beside its legs, and still guards every result (during a
model change the legs run again with the store's model, or BM25 alone: `model_change.py`)."""

from __future__ import annotations

import asyncio

import pytest

from carrag.services.container import Container
from carrag.services.errors import UpstreamError
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


async def test_a_store_of_another_model_never_returns_the_legs_run_with_ours(container: Container, monkeypatch) -> None:
    """The store's model ("another:model") cannot be loaded here: no 409 (a model change is being
    served, `model_change.py`), but nothing from the kNN leg run with our model either: BM25 alone."""
    await container.ingestion.ingest_file(TEXT, "oil.txt", IngestCommand())
    foreign = await other_model(container)

    async def identity() -> EmbeddingIdentity:
        await asyncio.sleep(0.05)  # answers after the legs: their results must not be returned
        return foreign

    monkeypatch.setattr(container.store, "embedding_identity", identity)
    outcome = await container.search.search(SearchQuery("engine oil", top_k=2, rerank=False))
    assert outcome.degraded is not None and "another:model" in outcome.degraded
    assert outcome.hits and all(hit.knn_rank is None for hit in outcome.hits)


async def test_a_leg_broken_by_a_model_change_is_not_reported(container: Container, monkeypatch) -> None:
    await container.ingestion.ingest_file(TEXT, "oil.txt", IngestCommand())
    foreign = await other_model(container)

    async def identity() -> EmbeddingIdentity:
        await asyncio.sleep(0.05)
        return foreign

    async def broken_leg(*args, **kwargs):
        raise UpstreamError("a vector of the wrong model")

    monkeypatch.setattr(container.store, "embedding_identity", identity)
    monkeypatch.setattr(container.store, "vector_search", broken_leg)
    outcome = await container.search.search(SearchQuery("engine oil", top_k=2, rerank=False))
    assert outcome.degraded is not None and outcome.hits


async def test_a_leg_failure_is_reported_when_no_model_change_is_pending(container: Container, monkeypatch) -> None:
    await container.ingestion.ingest_file(TEXT, "oil.txt", IngestCommand())

    async def broken_leg(*args, **kwargs):
        raise UpstreamError("the kNN leg failed")

    monkeypatch.setattr(container.store, "vector_search", broken_leg)
    with pytest.raises(UpstreamError, match="the kNN leg failed"):
        await container.search.search(SearchQuery("engine oil", top_k=2, rerank=False))

"""The query path's model check answered from memory (Elasticsearch, `layout.ServedIdentity`): the model
the kNN leg returns with its hits (`VectorHits.model`) decides whether the leg runs again."""

from __future__ import annotations

import numpy as np

from carrag.services.embedders.service import EmbeddingService
from carrag.services.model_change import ModelChange, QueryEmbedder
from carrag.services.models import ComponentHealth, EmbeddingIdentity, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.stores.base import VectorHits

OLD = EmbeddingIdentity("test:old", 3)
NEW = EmbeddingIdentity("test:new", 3)  # same size: only the model names tell the vectors apart


class Backend:
    provider, dimension = "test", 3

    def __init__(self, identity: EmbeddingIdentity, row: list[float]) -> None:
        self.model, self.identity, self.row = identity.model, identity.model, row

    async def embed(self, texts, kind):  # type: ignore[no-untyped-def]
        return np.array([self.row for _ in texts], dtype=np.float32)

    async def health(self) -> ComponentHealth:
        return ComponentHealth("embedder", "ok", "test", self.model, "")

    async def aclose(self) -> None:
        return None


class RememberingStore:
    """Answers the check from memory (``remembered``); its kNN leg reports the model of the vectors
    it searched (``live``) and, like `ElasticsearchStore`, remembers it from then on."""

    def __init__(self, remembered: EmbeddingIdentity, live: EmbeddingIdentity) -> None:
        self.remembered, self.live = remembered, live
        self.queries: list[list[float]] = []
        self.exact_reads = 0

    async def query_identity(self) -> EmbeddingIdentity:
        return self.remembered

    async def embedding_identity(self) -> EmbeddingIdentity:
        self.exact_reads += 1
        return self.live

    async def vector_search(self, vector, k, filters):  # type: ignore[no-untyped-def]
        self.queries.append([float(x) for x in vector])
        self.remembered = self.live
        chunk = StoredChunk("d1", 0, "text", 0, 4, "a.md", "a.md", [])
        return VectorHits([ScoredChunk(chunk, 1.0)], self.live)


def change_for(store: RememberingStore) -> ModelChange:
    configured = EmbeddingService(Backend(OLD, [1.0, 0.0, 0.0]), cache_size=0)
    return ModelChange(store, configured, build=lambda identity: Backend(identity, [0.0, 1.0, 0.0]))  # type: ignore[arg-type]


async def test_no_mapping_read_while_the_hits_are_of_the_query_model() -> None:
    store = RememberingStore(OLD, OLD)
    change = change_for(store)
    chosen = await change.for_queries()
    assert not chosen.pending
    found, _, used = await change.vector_search("q", 2, SearchFilters(), QueryEmbedder(change.configured, None))
    assert found and used.embedder is change.configured
    assert store.queries == [[1.0, 0.0, 0.0]] and store.exact_reads == 0


async def test_hits_of_another_model_run_the_leg_again_with_that_model() -> None:
    """Another process moved the alias to an index of NEW (same dimension) after this one last looked:
    the check (from memory) said OLD, the kNN hits say NEW, so the leg runs again with NEW's embedder."""
    store = RememberingStore(OLD, NEW)
    change = change_for(store)
    assert not (await change.for_queries()).pending  # out of date, and cannot know it yet
    found, _, used = await change.vector_search("q", 2, SearchFilters(), QueryEmbedder(change.configured, None))
    assert store.queries == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "searched again with the query embedded by NEW"
    assert found and used.pending and used.recorded == NEW
    assert (await change.for_queries()).pending, "the next search embeds with NEW from the start"
    await change.aclose()

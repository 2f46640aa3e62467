"""The CPU and scheduling of one search, with fakes around the search service: the kNN leg's embedding
is handed to its thread before the BM25 leg touches the store, in the caller's own task (no extra
turn of the event loop), and an unreranked search builds and normalises only the hits it keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
import pytest

from carrag.services.embedders.service import EmbeddingService
from carrag.services.models import EmbeddingIdentity, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.requests import SearchQuery
from carrag.services.retrieval import distinct
from carrag.services.retrieval.distinct import distinct_by_text
from carrag.services.retrieval.search import SearchService
from carrag.services.settings import Settings

IDENTITY = EmbeddingIdentity("stub:model", 4)


def chunk(document: int, index: int, text: str | None = None) -> StoredChunk:
    text = text if text is not None else f"passage {document}-{index}"
    return StoredChunk(f"doc-{document}", index, text, 0, len(text), "f.txt", f"src-{document}", [])


class Backend:
    provider, model, identity, dimension = "stub", "model", "stub:model", 4

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.tasks: list[asyncio.Task[object] | None] = []

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        self.events.append("embed")
        self.tasks.append(asyncio.current_task())
        return np.ones((len(texts), 4), dtype=np.float32)

    async def aclose(self) -> None:
        pass


class Store:
    def __init__(self, events: list[str], hits: list[ScoredChunk]) -> None:
        self.events = events
        self.hits = hits

    async def lexical_search(self, question: str, depth: int, filters: SearchFilters) -> list[ScoredChunk]:
        self.events.append("lexical")
        return self.hits

    async def vector_search(self, vector: np.ndarray, depth: int, filters: SearchFilters) -> list[ScoredChunk]:
        self.events.append("vector")
        return list(reversed(self.hits))

    async def embedding_identity(self) -> EmbeddingIdentity:
        return IDENTITY

    async def count_chunks(self) -> int:
        return len(self.hits)


class Collections:
    async def resolve(self, names: object) -> list[SimpleNamespace]:
        return [SimpleNamespace(collection_id="default", name="default")]


def service(events: list[str], hits: list[ScoredChunk]) -> tuple[SearchService, Backend]:
    backend = Backend(events)
    settings = Settings(_env_file=None, rerank_enabled=False, neighbour_window=0)
    embedder = EmbeddingService(backend, cache_size=0)  # type: ignore[arg-type]
    search = SearchService(settings, Store(events, hits), embedder, None, collections=Collections())  # type: ignore[arg-type]
    return search, backend


async def test_the_query_is_embedded_before_the_bm25_leg_reaches_the_store() -> None:
    events: list[str] = []
    search, _ = service(events, [ScoredChunk(chunk(1, 0), 1.0)])
    await search.search(SearchQuery("oil filter", top_k=1, rerank=False))
    # the BM25 leg first built and sent its request while the embedding thread waited for its turn
    assert events.index("embed") < events.index("lexical"), events


async def test_the_backend_embeds_in_the_callers_task() -> None:
    backend = Backend([])

    async def caller() -> asyncio.Task[object] | None:
        await EmbeddingService(backend, cache_size=0).embed_query("q")  # type: ignore[arg-type]
        return asyncio.current_task()

    # asyncio.wait_for ran it in a task of its own, started a turn of the event loop later
    assert await asyncio.ensure_future(caller()) is backend.tasks[-1]


async def test_an_unreranked_search_normalises_only_the_hits_it_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    texts: list[str] = []
    normalise = distinct.normalised_text

    def counted(text: str) -> str:
        texts.append(text)
        return normalise(text)

    monkeypatch.setattr(distinct, "normalised_text", counted)
    duplicate = ScoredChunk(chunk(9, 0, "passage 1-0"), 0.9)  # the same words as the best hit, another source
    hits = [ScoredChunk(chunk(1, 0), 1.0), duplicate, *(ScoredChunk(chunk(n, 0), 0.5) for n in range(2, 30))]
    search, _ = service([], hits)
    outcome = await search.search(SearchQuery("oil filter", top_k=5, rerank=False))
    kept = [hit.chunk.document_id for hit in outcome.hits]
    assert len(kept) == 5 and len({hit.chunk.text for hit in outcome.hits}) == 5
    assert ("doc-1" in kept) != ("doc-9" in kept)  # one of the two copies, the better ranked
    assert len(texts) == 6  # five kept and the copy skipped, not all 30 fused candidates


def test_distinct_with_a_limit_is_the_head_of_the_whole_answer() -> None:
    items = ["a", "a ", "b", "A", "b\n", "c", "d"]
    whole = distinct_by_text(items, str)
    assert whole == ["a", "b", "A", "c", "d"]
    for limit in range(len(whole) + 2):
        read: list[str] = []

        def text_of(item: str, read: list[str] = read) -> str:
            read.append(item)
            return item

        assert distinct_by_text(items, text_of, limit=limit) == whole[:limit]
        if 0 < limit <= len(whole):  # nothing read past the last hit kept
            assert len(read) == items.index(whole[limit - 1]) + 1

"""The query flow behind ``/search``, ``/query``, ``search_documents`` and ``carrag eval``: the BM25 and
kNN legs concurrently, each ``top_k × RETRIEVAL_K_MULTIPLIER`` deep, fused by RRF and made distinct;
then the cross-encoder reranks (skipped, with the reason, without a model); then each winner is
expanded with its neighbours.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field

from carrag.services.admission import AdmissionGate
from carrag.services.collections import CollectionService
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import CarragError
from carrag.services.model_change import ModelChange, QueryEmbedder
from carrag.services.models import DEFAULT_COLLECTION, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.requests import SearchQuery
from carrag.services.rerankers.base import Reranker
from carrag.services.retrieval.distinct import distinct_by_text
from carrag.services.retrieval.expansion import build_passages, windows_in_hand
from carrag.services.retrieval.fusion import FusedItem, reciprocal_rank_fusion
from carrag.services.retrieval.one_version import one_version_per_source
from carrag.services.settings import Settings
from carrag.services.stores.base import Store
from carrag.services.telemetry import NullTelemetry, Telemetry
from carrag.services.timing import elapsed_ms
from carrag.services.vocabulary import SearchMode

EMPTY_INDEX_MESSAGE = (
    "Nothing has been ingested yet. Add documents with POST /ingest/file or POST /ingest/url "
    "(or `carrag ingest`), then ask again."
)
NO_MATCH_MESSAGE = "No ingested passage matches this question and these filters."


@dataclass(slots=True)
class SearchHit:
    rank: int
    chunk: StoredChunk  # the winning chunk
    text: str  # the expanded passage
    score: float  # rerank score when reranked, else the fused (or single-leg) score
    rrf_score: float | None = None
    rerank_score: float | None = None
    bm25_rank: int | None = None
    knn_rank: int | None = None
    bm25_score: float | None = None
    knn_score: float | None = None
    window: tuple[int, int] | None = None  # chunk_index range of the passage
    merged_chunk_indexes: list[int] = field(default_factory=list)
    explained: bool = False  # the query asked for the ranks and scores behind this hit
    collection: str = DEFAULT_COLLECTION  # the name of the chunk's collection
    highlights: list[dict[str, int]] = field(default_factory=list)  # {start, end} in text the answer relies on

    @property
    def page(self) -> int | None:
        return self.chunk.pages[0] if self.chunk.pages else None

    @property
    def chunk_span(self) -> dict[str, int] | None:
        """Where the winning chunk's own text is in ``text`` (the passage is it with its neighbours)."""
        start = self.text.find(self.chunk.text)
        return None if start < 0 else {"start": start, "end": start + len(self.chunk.text)}

    @property
    def explain(self) -> SearchHit | None:
        """When the query asked for it (``explain``), the hit itself: the wire's ``explain`` object
        reads its ranks and scores (`carrag/api/schemas/query.py`)."""
        return self if self.explained else None


@dataclass(slots=True)
class SearchOutcome:
    hits: list[SearchHit]
    timings_ms: dict[str, float]
    reranked: bool
    rerank_note: str | None = None
    empty_index: bool = False
    message: str | None = None
    degraded: str | None = None  # why the results are lexical only (a model change; `model_change.py`)


class SearchService:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: EmbeddingService,
        reranker: Reranker,
        telemetry: Telemetry | None = None,
        collections: CollectionService | None = None,
        model_change: ModelChange | None = None,
    ) -> None:
        self.settings = settings
        self.telemetry = telemetry or NullTelemetry()
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
        self.collections = collections or CollectionService(store)
        # the model that embeds queries: the store's, loaded beside the configured one during a change
        self.model_change = model_change or ModelChange(store, embedder)
        # Bounded concurrency for retrieval: wait up to QUERY_QUEUE_TIMEOUT for a slot, then 429.
        self.admission = AdmissionGate(
            settings.max_concurrent_queries, None, "search", timeout=settings.query_queue_timeout
        )

    async def search(self, query: SearchQuery, *, expand: bool = True, depth: int | None = None) -> SearchOutcome:
        """``query`` comes validated from `RequestFactory.search`. ``depth``: candidates per leg
        (default top_k × RETRIEVAL_K_MULTIPLIER); ``expand=False`` skips neighbour expansion."""
        searched = await self.collections.resolve(query.collections)  # unknown name: NotFound (404)
        filters = dataclasses.replace(query.filters, collection_ids=tuple(c.collection_id for c in searched))
        names = {c.collection_id: c.name for c in searched}
        async with self.admission.admit():
            outcome = await self._search(query.question, query.top_k, filters, query.rerank, query.mode, expand, depth)
        for hit in outcome.hits:
            hit.explained = query.explain
            hit.collection = names.get(hit.chunk.collection_id, hit.chunk.collection_id)
        self.telemetry.stages("query", outcome.timings_ms)
        return outcome

    async def _search(
        self,
        question: str,
        top_k: int,
        filters: SearchFilters,
        rerank: bool | None,
        mode: SearchMode,
        expand: bool,
        depth: int | None,
    ) -> SearchOutcome:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        depth = depth or top_k * self.settings.retrieval_k_multiplier
        lexical, semantic, serving, embed_ms = await self._retrieve(question, depth, filters, mode, timings)
        lexical, semantic = await one_version_per_source(self.store, lexical, semantic)
        if serving.note is not None:  # the store's model cannot be loaded (logged when it was tried)
            mode = SearchMode.BM25
        timings["embed_query"] = embed_ms
        timings["retrieve"] = elapsed_ms(started)

        chunks: dict[tuple[str, int], ScoredChunk] = {}
        bm25_scores: dict[tuple[str, int], float] = {}
        knn_scores: dict[tuple[str, int], float] = {}
        lexical_keys = [hit.chunk.key for hit in lexical]
        semantic_keys = [hit.chunk.key for hit in semantic]
        for key, hit in zip(lexical_keys, lexical, strict=True):
            chunks.setdefault(key, hit)
            bm25_scores.setdefault(key, hit.score)
        for key, hit in zip(semantic_keys, semantic, strict=True):
            chunks.setdefault(key, hit)
            knn_scores.setdefault(key, hit.score)
        legs = {}
        if mode in (SearchMode.HYBRID, SearchMode.BM25):
            legs["bm25"] = lexical_keys
        if mode in (SearchMode.HYBRID, SearchMode.KNN):
            legs["knn"] = semantic_keys
        step = time.perf_counter()
        fused = reciprocal_rank_fusion(legs, k=self.settings.rrf_k)[:depth]
        timings["fuse"] = elapsed_ms(step)

        if not fused:
            empty = await self.store.count_chunks() == 0
            timings["total"] = elapsed_ms(started)
            message = EMPTY_INDEX_MESSAGE if empty else NO_MATCH_MESSAGE
            return SearchOutcome([], timings, False, None, empty, message, degraded=serving.note)

        if rerank is None:
            rerank = self.settings.rerank_enabled if self.settings.rerank_enabled != "auto" else self.reranker.available
        candidates = (_hit(mode, item, chunks[item.key].chunk, bm25_scores, knn_scores) for item in fused)
        # The same passage stored twice shows once. Unreranked, only the first top_k distinct hits stay,
        # so the rest are neither built nor normalised; reranking scores every candidate.
        hits = distinct_by_text(candidates, lambda hit: hit.chunk.text, limit=None if rerank else top_k)

        reranked, note = False, None
        if rerank:
            step = time.perf_counter()
            reranked, note = await self._rerank(question, hits)
            timings["rerank"] = elapsed_ms(step)
        hits = hits[:top_k]

        if expand and self.settings.neighbour_window > 0:
            step = time.perf_counter()
            hits = distinct_by_text(await self._expand(hits, chunks), lambda hit: hit.text)
            timings["expand"] = elapsed_ms(step)
        for rank, ranked in enumerate(hits, start=1):
            ranked.rank = rank
        timings["total"] = elapsed_ms(started)
        return SearchOutcome(hits, timings, reranked, note, degraded=serving.note)

    async def _retrieve(
        self, question: str, depth: int, filters: SearchFilters, mode: SearchMode, timings: dict[str, float]
    ) -> tuple[list[ScoredChunk], list[ScoredChunk], QueryEmbedder, float]:
        """Both legs at once; ``timings`` gets each leg's own store time (``bm25_leg``, ``knn_leg``).
        The kNN leg first asks which model embeds queries for the live vectors (`model_change.py`:
        the configured one, or the store's during a model change, or none: BM25 alone)."""

        async def bm25_leg(wanted: bool) -> list[ScoredChunk]:
            if not wanted:
                return []
            step = time.perf_counter()
            found = await self.store.lexical_search(question, depth, filters)
            timings["bm25_leg"] = elapsed_ms(step)
            return found

        async def knn_leg() -> tuple[list[ScoredChunk], QueryEmbedder, float]:
            serving = await self.model_change.for_queries()
            if mode == SearchMode.BM25 or serving.embedder is None:
                return [], serving, 0.0
            step = time.perf_counter()
            found, embed_ms, serving = await self.model_change.vector_search(question, depth, filters, serving)
            timings["knn_leg"] = round(elapsed_ms(step) - embed_ms, 2)
            return found, serving, embed_ms

        (semantic, serving, embed_ms), lexical = await asyncio.gather(knn_leg(), bm25_leg(mode != SearchMode.KNN))
        if mode == SearchMode.KNN and serving.note is not None:  # no model for the live vectors: BM25 instead
            lexical = await bm25_leg(True)
        return lexical, semantic, serving, embed_ms

    async def _rerank(self, question: str, hits: list[SearchHit]) -> tuple[bool, str | None]:
        if not self.reranker.available:
            return False, f"reranking skipped: {self.reranker.unavailable_reason}"
        try:
            scores = await self.reranker.scores(question, [hit.chunk.text for hit in hits])
        except CarragError as exc:
            return False, f"reranking failed, results are unreranked: {exc.message}"
        for hit, score in zip(hits, scores, strict=True):
            hit.rerank_score = score
            hit.score = score
        hits.sort(key=lambda hit: hit.rerank_score or 0.0, reverse=True)
        return True, None

    async def _expand(self, hits: list[SearchHit], found: dict[tuple[str, int], ScoredChunk]) -> list[SearchHit]:
        """Each winner's window: the one its hit came with (Elasticsearch), else one batched read."""
        radius = self.settings.neighbour_window
        winners = [hit.chunk for hit in hits]
        neighbours, missing = windows_in_hand(winners, found, radius)
        if missing:
            neighbours += await self.store.get_windows(missing, radius)
        expanded: list[SearchHit] = []
        for passage in build_passages(winners, neighbours, radius):
            best = hits[passage.winners[0]]
            best.text = passage.text
            indexes = [chunk.chunk_index for chunk in passage.chunks]
            best.window = (min(indexes), max(indexes)) if indexes else None
            best.merged_chunk_indexes = sorted(hits[p].chunk.chunk_index for p in passage.winners)
            expanded.append(best)
        return expanded


def _hit(
    mode: SearchMode,
    item: FusedItem[tuple[str, int]],
    chunk: StoredChunk,
    bm25_scores: dict[tuple[str, int], float],
    knn_scores: dict[tuple[str, int], float],
) -> SearchHit:
    bm25, knn = bm25_scores.get(item.key), knn_scores.get(item.key)
    return SearchHit(
        rank=0,
        chunk=chunk,
        text=chunk.text,
        score=_primary_score(mode, item.score, bm25, knn),
        rrf_score=item.score,
        bm25_rank=item.ranks.get("bm25"),
        knn_rank=item.ranks.get("knn"),
        bm25_score=bm25,
        knn_score=knn,
    )


def _primary_score(mode: SearchMode, rrf: float, bm25: float | None, knn: float | None) -> float:
    """A single-leg search reports that leg's own score; hybrid reports the fused one."""
    if mode == SearchMode.BM25:
        return bm25 or 0.0
    if mode == SearchMode.KNN:
        return knn or 0.0
    return rrf

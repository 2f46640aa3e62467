"""A change of embedding model while the store still holds the old model's vectors (R; configured: C).

Queries are embedded by R, built beside C (`embedders/recorded.py`), until the reindex swaps C's
vectors in; each search reads the recorded identity first, and a kNN leg that straddles the swap runs
again. When R cannot be built, searches answer from BM25 alone and say so (``degraded``). On SQLite an
ingest embeds with R and, once a reindex towards C has begun, with C too, written in the same
transaction (`PendingChangeWrite`); without R, or on Elasticsearch, ingests are refused (409) until
the swap. Nothing starts the reindex by itself: a changed setting can be a mistake, and re-embedding
with a hosted model costs money.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass

import numpy as np

from carrag.services.embedders.base import EmbeddingBackend
from carrag.services.embedders.service import EmbeddingService, ProgressCallback
from carrag.services.errors import CarragError, Conflict, DependencyUnavailable, EmbeddingModelMismatch
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, OriginalFile, ScoredChunk, SearchFilters
from carrag.services.stores.base import Store
from carrag.services.stores.sqlite import SqliteStore
from carrag.services.stores.sqlite_reindex import SqliteReindex, SwappedMeanwhile

logger = logging.getLogger(__name__)

RETRY_BUILD_SECONDS = 30.0  # a recorded model that could not be loaded is tried again after this long
LOAD_TIMEOUT_SECONDS = 30.0  # building it and embedding one probe text

BackendBuilder = Callable[[EmbeddingIdentity], EmbeddingBackend]  # raises DependencyUnavailable
ServiceFactory = Callable[[EmbeddingBackend], EmbeddingService]


class ModelChangePending(Conflict):
    """409: an ingest while the store's model cannot be loaded and the configured one is another."""

    def __init__(self, stored: EmbeddingIdentity, configured: EmbeddingIdentity, reason: str) -> None:
        super().__init__(
            f"The store's vectors are of embedding model {stored.describe()}, which cannot be loaded here "
            f"({reason}), and the configured model is {configured.describe()}. Documents can be ingested "
            "again once `carrag reindex` (or POST /admin/reindex) has re-embedded the store with the "
            "configured model; searches meanwhile are lexical (BM25) only. Or configure the original "
            "model again, or empty the store: `carrag reset` (POST /admin/reset)."
        )


@dataclass(slots=True)
class QueryEmbedder:
    """The embedder for a query against the live vectors, as chosen for one search."""

    embedder: EmbeddingService | None  # None: the store's model cannot be loaded; lexical results only
    recorded: EmbeddingIdentity | None  # the store's model when chosen (None: an empty store)
    pending: bool = False  # the store's model is not the configured one (a reindex has yet to swap)
    note: str | None = None  # why the results are lexical only


@dataclass(slots=True)
class ModelChangeStatus:
    """For /health: a model change waiting for (or in the middle of) its reindex."""

    stored: str
    configured: str
    queries: str  # "stored model" (loaded beside), "loading" or "lexical only" (it cannot be loaded)
    reindex: str  # SQLite: "not started" | "building" (new vectors beside, possibly interrupted); else a note
    done: int | None = None  # chunks with their new vector (SQLite)
    total: int | None = None
    detail: str = ""


@dataclass(slots=True)
class _Unavailable:
    reason: str
    since: float


class ModelChange:
    """Which embedder serves the live vectors, and the recorded model loaded on demand beside the
    configured one. One per process (the container's)."""

    def __init__(
        self,
        store: Store,
        configured: EmbeddingService,
        build: BackendBuilder | None = None,
        make_service: ServiceFactory = EmbeddingService,
    ) -> None:
        self.store = store
        self.configured = configured
        self._build = build
        self._make_service = make_service
        self._loaded: dict[EmbeddingIdentity, EmbeddingService] = {}
        self._unavailable: dict[EmbeddingIdentity, _Unavailable] = {}
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[object]] = set()

    # --- the recorded model, loaded beside ------------------------------------------------------------
    async def recorded_embedder(self, identity: EmbeddingIdentity) -> EmbeddingService | None:
        """The store's recorded model, built once (None, with the reason kept, when it cannot be). The
        first attempt is waited for (start-up begins it, `prepare`); after a failure, the next attempts
        run in the background, at most every RETRY_BUILD_SECONDS, and callers do not wait for them."""
        if (loaded := self._loaded.get(identity)) is not None:
            return loaded
        failed = self._unavailable.get(identity)
        if failed is None:
            return await self._try_load(identity)
        if time.monotonic() - failed.since >= RETRY_BUILD_SECONDS and not self._tasks:
            failed.since = time.monotonic()
            self._in_background(self._try_load(identity))
        return None

    async def _try_load(self, identity: EmbeddingIdentity) -> EmbeddingService | None:
        async with self._lock:
            if (loaded := self._loaded.get(identity)) is not None:
                return loaded
            try:
                service = await asyncio.wait_for(self._load(identity), LOAD_TIMEOUT_SECONDS)
            except (DependencyUnavailable, TimeoutError) as exc:
                reason = getattr(exc, "message", None) or f"not loaded within {LOAD_TIMEOUT_SECONDS:.0f}s"
                self._unavailable[identity] = _Unavailable(reason, time.monotonic())
                logger.warning(
                    "the store's embedding model cannot be loaded: searches are lexical only until the reindex",
                    extra={"stored_model": identity.describe(), "reason": reason},
                )
                return None
            self._unavailable.pop(identity, None)
            self._loaded[identity] = service
            logger.warning(
                "embedding model change pending: queries use the store's model, loaded beside the configured one,"
                " until `carrag reindex` (POST /admin/reindex) swaps in the new vectors",
                extra={"stored_model": identity.describe(), "configured_model": self.configured.identity},
            )
            return service

    def _in_background(self, work: Coroutine[object, object, object]) -> None:
        task = asyncio.create_task(work, name="load-recorded-embedder")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def prepare(self) -> None:
        """At start-up: when a model change is pending, say so and begin loading the store's model (the
        first search waits for it rather than the start-up)."""
        recorded, configured = await self._identities()
        if recorded is None or configured is None or recorded.accepts(configured):
            return
        logger.warning(
            "the configured embedding model is not the store's: loading the store's beside it until"
            " `carrag reindex` (POST /admin/reindex) re-embeds the store; the reindex does not start by itself",
            extra={"stored_model": recorded.describe(), "configured_model": configured.describe()},
        )
        self._in_background(self._try_load(recorded))

    async def _identities(self) -> tuple[EmbeddingIdentity | None, EmbeddingIdentity | None]:
        try:
            return await self.store.embedding_identity(), await self.configured.embedding_identity()
        except CarragError:  # the store's and embedder's own health say what is wrong
            return None, None

    async def _load(self, identity: EmbeddingIdentity) -> EmbeddingService:
        if self._build is None:
            raise DependencyUnavailable("embedder", "this process cannot load other embedding models")
        build = self._build
        service = self._make_service(await asyncio.to_thread(build, identity))
        try:
            built = await service.embedding_identity()
        except BaseException:
            await service.aclose()
            raise
        if built != identity:
            await service.aclose()
            raise DependencyUnavailable("embedder", f"the model built from it is {built.describe()}")
        return service

    def unavailable_reason(self, identity: EmbeddingIdentity) -> str:
        failed = self._unavailable.get(identity)
        return failed.reason if failed else "not loaded"

    # --- queries -------------------------------------------------------------------------------------
    async def for_queries(self) -> QueryEmbedder:
        """The embedder for a search's query: the configured model, or the store's during a change."""
        recorded = await self.store.query_identity()
        if recorded is None:
            return QueryEmbedder(self.configured, None)
        configured = await self.configured.embedding_identity()
        if recorded.accepts(configured):
            return QueryEmbedder(self.configured, recorded)
        serving = await self.recorded_embedder(recorded)
        if serving is not None:
            return QueryEmbedder(serving, recorded, pending=True)
        note = (
            f"lexical (BM25) results only: the store's vectors are of {recorded.describe()}, which cannot be "
            f"loaded here ({self.unavailable_reason(recorded)}); the configured embedding model is "
            f"{configured.describe()}. Semantic search returns when `carrag reindex` (POST /admin/reindex) "
            "has re-embedded the store with it."
        )
        return QueryEmbedder(None, recorded, pending=True, note=note)

    async def vector_search(
        self, question: str, depth: int, filters: SearchFilters, chosen: QueryEmbedder
    ) -> tuple[list[ScoredChunk], float, QueryEmbedder]:
        """The kNN leg with ``chosen``'s embedder; during a model change, again with the new model if
        the reindex swapped the vectors meanwhile. Returns (hits, milliseconds embedding, the embedder
        finally used)."""
        embed_ms = 0.0
        for attempt in range(2):
            embedder = chosen.embedder
            if embedder is None:
                return [], embed_ms, chosen
            started = time.perf_counter()
            vector = await embedder.embed_query(question)
            embed_ms += round((time.perf_counter() - started) * 1000, 2)
            try:
                found = await self.store.vector_search(vector, depth, filters)
            except Exception:
                if attempt or not chosen.pending or await self.store.embedding_identity() == chosen.recorded:
                    raise
                chosen = await self.for_queries()  # swapped under this search (another dimension, say)
                continue
            searched = found.model  # the hits' model, when the store can tell
            if searched is not None:  # the hits' vectors must be of the model that embedded the query
                swapped = not searched.accepts(await embedder.embedding_identity())
            else:
                swapped = chosen.pending and await self.store.embedding_identity() != chosen.recorded
            if not swapped:
                return found, embed_ms, chosen
            if attempt:  # swapped twice under one search: no kNN hits rather than another model's
                return [], embed_ms, chosen
            chosen = await self.for_queries()
        raise AssertionError("unreachable")

    # --- ingestion -----------------------------------------------------------------------------------
    async def ingest_plan(self, recorded: EmbeddingIdentity, configured: EmbeddingIdentity) -> PendingChangeWrite:
        """How to embed and write a document while the store's model is ``recorded`` and the configured
        one ``configured``; raises when it cannot be done (`ModelChangePending`, or the usual
        `EmbeddingModelMismatch` on a store that does not build vectors beside, like Elasticsearch)."""
        if not isinstance(self.store, SqliteStore):
            raise EmbeddingModelMismatch(recorded.describe(), configured.describe())
        serving = await self.recorded_embedder(recorded)
        if serving is None:
            raise ModelChangePending(recorded, configured, self.unavailable_reason(recorded))
        building = await SqliteReindex(self.store).target() == configured
        return PendingChangeWrite(self, SqliteReindex(self.store), recorded, serving, configured, building)

    # --- /health -------------------------------------------------------------------------------------
    async def status(self) -> ModelChangeStatus | None:
        """None unless the store's model is another than the configured one. Never waits for a load."""
        recorded, configured = await self._identities()
        if recorded is None or configured is None or recorded.accepts(configured):
            return None
        serving = self._loaded.get(recorded)
        failed = self._unavailable.get(recorded)
        status = ModelChangeStatus(
            stored=recorded.describe(),
            configured=configured.describe(),
            queries="stored model" if serving is not None else "lexical only" if failed else "loading",
            reindex="not started" if isinstance(self.store, SqliteStore) else "moves the alias when done",
        )
        if isinstance(self.store, SqliteStore):
            reindex = SqliteReindex(self.store)
            if await reindex.target() == configured:
                counts = await reindex.counts()
                status.reindex, status.done, status.total = "building", counts.done, counts.total
        queries = {
            "stored model": "queries are embedded by the stored model",
            "lexical only": f"searches are lexical only ({self.unavailable_reason(recorded)})",
            "loading": "the stored model is loading to embed queries",
        }[status.queries]
        progress = {
            "building": f"new vectors built beside: {status.done}/{status.total} chunks",
            "not started": "reindex not started",
        }.get(status.reindex, f"reindex: a new index generation; the reindex {status.reindex}")
        status.detail = (
            f"embedding model change pending: the live vectors are {status.stored}, the configured model is "
            f"{status.configured}; {queries} until `carrag reindex` (POST /admin/reindex) swaps the new vectors "
            f"in ({progress})"
        )
        return status

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for service in self._loaded.values():
            await service.aclose()
        self._loaded.clear()


@dataclass(slots=True)
class EmbeddedTwice:
    texts: Sequence[str]
    live: np.ndarray  # the store's (recorded) model
    new: np.ndarray | None  # the configured model, when a reindex towards it has begun


@dataclass(slots=True)
class PendingChangeWrite:
    """Embedding and writing one document while a model change is pending (SQLite)."""

    change: ModelChange
    reindex: SqliteReindex
    live: EmbeddingIdentity
    serving: EmbeddingService
    new: EmbeddingIdentity
    with_new: bool  # a reindex towards the configured model has begun: its vectors go beside

    async def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> EmbeddedTwice:
        passes = 2 if self.with_new else 1
        total = len(texts) * passes

        def report(offset: int) -> ProgressCallback | None:
            if progress is None:
                return None
            return lambda done, _: progress(offset + done, total)

        live = await self.serving.embed_documents(texts, report(0))
        new = await self.change.configured.embed_documents(texts, report(len(texts))) if self.with_new else None
        return EmbeddedTwice(texts, live, new)

    async def write(
        self,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: EmbeddedTwice,
        original: OriginalFile | None = None,
    ) -> str | None:
        try:
            return await self.reindex.write_document(
                document, chunks, (self.live, vectors.live), (self.new, vectors.new), original
            )
        except SwappedMeanwhile:  # the reindex finished between embedding and writing: the new model only
            matrix = await self.change.configured.embed_documents(vectors.texts)
            return await self.change.store.write_document(document, chunks, matrix, self.new, original=original)

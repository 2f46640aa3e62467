"""The composition root: settings in, wired services out. The only place that picks adapters.

A component that cannot start does not stop the service: the store and embedder report
``unavailable`` in /health and the routes that need them answer 503 with the reason; a missing
local LLM falls back to the extractive answerer; a missing reranker model disables reranking.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from carrag import extras
from carrag.services.answering import AnswerService
from carrag.services.collections import CollectionService
from carrag.services.documents import DocumentService
from carrag.services.embedders.base import EmbeddingBackend, TextKind
from carrag.services.embedders.recorded import recorded_backend, settings_backend
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import DependencyUnavailable
from carrag.services.fetchers.base import Fetcher
from carrag.services.fetchers.http import HttpFetcher
from carrag.services.ingestion import IngestionService
from carrag.services.jobs import InMemoryJobRepository, JobManager, JobRepository
from carrag.services.llms.base import LLM
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.model_change import ModelChange
from carrag.services.models import ComponentHealth
from carrag.services.page_images import PageImageService
from carrag.services.reindexing import Reindexer
from carrag.services.requests import RequestFactory
from carrag.services.rerankers.base import Reranker
from carrag.services.rerankers.flashrank import FlashrankReranker
from carrag.services.retrieval.search import SearchService
from carrag.services.settings import Settings, revealed
from carrag.services.stores.base import Store
from carrag.services.sync.service import SyncService
from carrag.services.tagging import KeywordTagger, LLMTagger, NoTagger, Tagger
from carrag.services.telemetry import Telemetry
from carrag.services.telemetry.prometheus import PrometheusTelemetry

logger = logging.getLogger(__name__)


class UnavailableEmbedder:
    """Stands in for an embedder that failed to load, so the failure reaches callers as a 503."""

    provider = "unavailable"

    def __init__(self, model: str, reason: str) -> None:
        self.model = model
        self.reason = reason

    @property
    def identity(self) -> str:
        return f"unavailable:{self.model}"

    async def embed(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        raise DependencyUnavailable("embedder", self.reason)

    async def health(self) -> ComponentHealth:
        return ComponentHealth("embedder", "unavailable", "none", self.model, self.reason)

    async def aclose(self) -> None:
        return None


def build_store(settings: Settings) -> Store:
    if settings.store == "elasticsearch":
        extras.require("elasticsearch", "STORE=elasticsearch")
        from carrag.services.stores.elasticsearch import ElasticsearchStore

        return ElasticsearchStore.from_settings(settings)
    from carrag.services.stores.sqlite import SqliteStore

    if hint := settings.legacy_store_hint():
        logger.warning(hint)
    return SqliteStore(settings.resolved_sqlite_path)


def build_job_repository(settings: Settings, store: Store, store_error: str | None = None) -> JobRepository:
    """Job records go where the documents go: a table in the SQLite file, an index beside the
    Elasticsearch alias; a store without either (a test double) keeps them in memory. ``store_error``:
    why the store did not open (a SQLite file another process holds is not written to)."""
    from carrag.services.stores.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        from carrag.services.stores.sqlite_jobs import SqliteJobRepository

        return SqliteJobRepository(store.path, unavailable=store_error)
    if getattr(store, "backend", None) == "elasticsearch":
        from carrag.services.stores.elasticsearch.jobs import ElasticsearchJobRepository

        return ElasticsearchJobRepository(
            store.connection,  # type: ignore[attr-defined]
            store.index,  # type: ignore[attr-defined]
            replicas=settings.elasticsearch_replicas,
        )
    return InMemoryJobRepository()


def build_embedding_backend(settings: Settings) -> EmbeddingBackend:
    try:
        return settings_backend(settings, settings.embedder, dimensions=settings.embeddings_dimensions)
    except DependencyUnavailable as exc:
        logger.error("embedder unavailable", extra={"reason": exc.message})
        return UnavailableEmbedder(settings.embedder, exc.message)


def embedding_service(settings: Settings, backend: EmbeddingBackend, telemetry: Telemetry) -> EmbeddingService:
    return EmbeddingService(
        backend,
        batch_size=settings.embed_batch_size,
        cache_size=settings.embed_cache_size,
        retries=settings.embed_retries,
        backoff=settings.embed_retry_backoff,
        timeout=settings.embed_timeout,
        telemetry=telemetry,
    )


def build_model_change(
    settings: Settings, store: Store, embedder: EmbeddingService, telemetry: Telemetry
) -> ModelChange:
    """While the store holds another model's vectors than the configured one's, that model is built
    from its recorded identity (`embedders/recorded.py`) to embed queries and new documents."""
    return ModelChange(
        store,
        embedder,
        lambda identity: recorded_backend(identity.model, identity.dimension, settings),
        lambda backend: embedding_service(settings, backend, telemetry),
    )


def build_llm(settings: Settings) -> LLM:
    if settings.llm == "ollama":
        from carrag.services.llms.ollama import OllamaLLM

        return OllamaLLM(settings.ollama_base_url, settings.ollama_llm_model, timeout=settings.ollama_timeout)
    if settings.llm == "openai":
        from carrag.services.llms.openai_compatible import OpenAICompatibleLLM

        return OpenAICompatibleLLM(
            settings.openai_base_url,
            settings.openai_model,
            revealed(settings.openai_api_key),
            timeout=settings.llm_timeout,
        )
    if settings.llm == "none":
        return ExtractiveLLM("LLM=none")
    try:
        from carrag.services.llms.llama_cpp import LlamaCppLLM

        return LlamaCppLLM(
            settings.local_llm_model_path, context=settings.local_llm_context, threads=settings.local_llm_threads
        )
    except DependencyUnavailable as exc:
        logger.error("local LLM unavailable; answers will be extractive", extra={"reason": exc.message})
        return ExtractiveLLM(exc.message)


def build_tagger(settings: Settings, llm: LLM) -> Tagger:
    use_llm = settings.tagger == "llm" or (settings.tagger == "auto" and llm.capable)
    if settings.tagger == "off":
        return NoTagger()
    if use_llm:
        return LLMTagger(
            llm,
            settings.tagging_prompt,
            content_chars=settings.tagging_content_chars,
            max_tags=settings.max_auto_tags,
            timeout=settings.tagging_timeout,
        )
    return KeywordTagger(content_chars=settings.tagging_content_chars, max_tags=settings.max_auto_tags)


def build_fetcher(settings: Settings) -> Fetcher:
    return HttpFetcher(
        timeout=settings.fetch_timeout,
        max_bytes=settings.fetch_max_bytes,
        max_redirects=settings.fetch_max_redirects,
        user_agent=settings.fetch_user_agent,
        allowed_hosts=settings.fetch_allowed_hosts,
        per_host_delay=settings.per_host_delay,
    )


@dataclass
class Container:
    settings: Settings
    store: Store
    embedder: EmbeddingService
    llm: LLM
    reranker: Reranker
    fetcher: Fetcher
    tagger: Tagger
    ingestion: IngestionService
    search: SearchService
    answers: AnswerService
    documents: DocumentService
    requests: RequestFactory
    jobs: JobManager
    telemetry: Telemetry
    reindexer: Reindexer  # `carrag reindex` / POST /admin/reindex
    model_change: ModelChange  # the store's model loaded beside a newly configured one
    startup_errors: dict[str, str] = field(default_factory=dict)

    @property
    def collections(self) -> CollectionService:
        """The collections (knowledge bases), shared by every service."""
        return self.documents.collections

    @functools.cached_property
    def page_images(self) -> PageImageService:
        """Pictures of PDF pages with a chunk marked (GET /documents/{id}/pages/{n}/image)."""
        return PageImageService(self.settings, self.documents)

    @functools.cached_property
    def sync(self) -> SyncService:
        """Folder syncs and site crawls (`carrag sync`, POST /sync, POST /ingest/url with ``crawl``)."""
        return SyncService(self.settings, self.store, self.ingestion, self.fetcher, self.jobs, self.collections)

    async def health(self) -> dict[str, ComponentHealth]:
        store, embedder, llm, reranker = await asyncio.gather(
            self.store.health(), self.embedder.health(), self.llm.health(), self.reranker.health()
        )
        components = {"store": store, "embedder": embedder, "llm": llm, "reranker": reranker}
        if (change := await self.model_change.status()) is not None:
            if self.reindexer.running:
                change.detail += "; a reindex is running in this process"
            components["model_change"] = ComponentHealth(
                "model_change", "degraded", self.store.backend, change.configured, change.detail
            )
        return components

    async def aclose(self) -> None:
        await self.reindexer.aclose()  # committed batches stay: the next run continues from them
        closes = [self.jobs.aclose, self.fetcher.aclose, self.embedder.aclose, self.model_change.aclose]
        for close in [*closes, self.llm.aclose, self.store.close]:
            try:
                await close()
            except Exception:
                logger.exception("error while closing a component")


async def build_container(
    settings: Settings,
    *,
    store: Store | None = None,
    embedding_backend: EmbeddingBackend | None = None,
    llm: LLM | None = None,
    reranker: Reranker | None = None,
    fetcher: Fetcher | None = None,
    telemetry: Telemetry | None = None,
) -> Container:
    """Wire everything from ``settings``; keyword arguments replace single adapters (tests, eval).

    Every service reports to ``telemetry``: by default a `PrometheusTelemetry`, which the app serves at
    /metrics."""
    telemetry = telemetry or PrometheusTelemetry()
    startup_errors: dict[str, str] = {}
    store = store or build_store(settings)
    try:
        await store.open()
    except DependencyUnavailable as exc:
        startup_errors["store"] = exc.message
        logger.error("store unavailable at startup; requests that need it will get 503", extra={"reason": exc.message})
    backend = (
        embedding_backend
        if embedding_backend is not None
        else await asyncio.to_thread(build_embedding_backend, settings)
    )
    embedder = embedding_service(settings, backend, telemetry)
    if llm is None:
        llm = await asyncio.to_thread(build_llm, settings)
    if reranker is None:
        reranker = await asyncio.to_thread(
            FlashrankReranker,
            settings.reranker_model,
            settings.resolved_reranker_cache_dir,
            max_length=settings.reranker_max_length,
            required=settings.rerank_enabled is True,
        )
    fetcher = fetcher or build_fetcher(settings)
    tagger = build_tagger(settings, llm)
    collections = CollectionService(store)  # one registry cache for every service
    model_change = build_model_change(settings, store, embedder, telemetry)
    if "store" not in startup_errors:
        await model_change.prepare()  # a pending model change is logged, and the store's model loaded
    search = SearchService(settings, store, embedder, reranker, telemetry, collections, model_change)
    ingestion = IngestionService(settings, store, embedder, tagger, fetcher, telemetry, collections, model_change)
    return Container(
        settings=settings,
        store=store,
        embedder=embedder,
        llm=llm,
        reranker=reranker,
        fetcher=fetcher,
        tagger=tagger,
        ingestion=ingestion,
        search=search,
        answers=AnswerService(settings, search, llm, telemetry),
        documents=DocumentService(store, collections),
        requests=RequestFactory(settings),
        jobs=JobManager(
            settings, ingestion, telemetry, build_job_repository(settings, store, startup_errors.get("store"))
        ),
        telemetry=telemetry,
        startup_errors=startup_errors,
        reindexer=Reindexer(store, embedder),
        model_change=model_change,
    )

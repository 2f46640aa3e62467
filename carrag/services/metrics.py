"""Prometheus metrics: every metric Carrag exports is defined here, on a registry per app.

What feeds them:
- HTTP: `carrag.api.middleware.AccessLogMiddleware` (latency by route template, method and status;
  requests in flight);
- the services, through `instrument(container)`: their existing hooks (`EmbeddingService.on_batch`,
  `IngestionService.on_indexed`, `JobManager.on_finished`) and the ``timings_ms`` their results
  already carry (search stages, generation, ingest stages);
- dependency failures answered to clients (`carrag.api.routes.ops.count_dependency_errors`: the 503s of
  `DependencyUnavailable`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# Search stages reported by SearchService in SearchOutcome.timings_ms, generation stages by
# AnswerService in its ``done`` event, ingest stages by IngestionService in IngestResult.timings_ms.
SEARCH_STAGES = ("embed_query", "retrieve", "fuse", "rerank", "expand", "total")
GENERATION_STAGES = ("generate", "first_token")
INGEST_STAGES = ("fetch", "parse", "tag", "chunk", "embed", "index")
JOB_STATES = ("queued", "parsing", "tagging", "chunking", "embedding", "indexing", "done", "failed", "cancelled")
UNMATCHED_ROUTE = "unmatched"  # requests no route matched (404s): one label, not one per path


class _JobStates(Collector):
    """``carrag_ingest_jobs{state}``, read from the job manager at scrape time."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self.counts = counts

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily("carrag_ingest_jobs", "Ingest jobs held in memory, by state.", labels=["state"])
        counts = self.counts()
        for state in JOB_STATES:
            family.add_metric([state], counts.get(state, 0))
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests_in_flight = Gauge("carrag_http_requests_in_flight", "HTTP requests being served.", registry=r)
        self.request_seconds = Histogram(
            "carrag_http_request_duration_seconds",
            "HTTP request latency until the last response byte (streams: until the stream ends).",
            ["method", "route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.stage_seconds = Histogram(
            "carrag_stage_duration_seconds",
            "Pipeline stage latency. pipeline=query: embed_query, retrieve, fuse, rerank, expand, total, "
            "generate, first_token; pipeline=ingest: fetch, parse, tag, chunk, embed, index.",
            ["pipeline", "stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.embedded_texts = Counter(
            "carrag_embedded_texts", "Texts sent to the embedding backend (cache hits excluded).", registry=r
        )
        self.embedding_seconds = Counter(
            "carrag_embedding_seconds", "Seconds spent in embedding backend calls.", registry=r
        )
        self.chunks_indexed = Counter("carrag_chunks_indexed", "Chunks written to the store.", registry=r)
        self.documents_ingested = Counter(
            "carrag_documents_ingested",
            "Ingests that completed, by outcome (ingested, unchanged, duplicate).",
            ["status"],
            registry=r,
        )
        self.dependency_errors = Counter(
            "carrag_dependency_errors",
            "Failures of a dependency (component=store, embedder, llm, ...) that reached a client as a 503 "
            "or failed an ingest job.",
            ["component"],
            registry=r,
        )
        self.jobs_finished = Counter(
            "carrag_ingest_jobs_finished", "Ingest jobs that ended, by final state.", ["state"], registry=r
        )

    # --- feeding ------------------------------------------------------------------------------------
    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.request_seconds.labels(method, route, str(status)).observe(seconds)

    def observe_stages(self, pipeline: str, timings_ms: dict[str, float], stages: Iterable[str]) -> None:
        for stage in stages:
            if stage in timings_ms:
                self.stage_seconds.labels(pipeline, stage).observe(timings_ms[stage] / 1000)

    def observe_embedding(self, texts: int, seconds: float) -> None:
        self.embedded_texts.inc(texts)
        self.embedding_seconds.inc(seconds)

    def dependency_error(self, component: str) -> None:
        self.dependency_errors.labels(component).inc()

    def watch_jobs(self, counts: Callable[[], dict[str, int]]) -> None:
        self.registry.register(_JobStates(counts))

    # --- exporting ----------------------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


def instrument(container: Any, metrics: Metrics) -> None:
    """Connect a container's services to ``metrics``.

    The services already report what happened (hooks, ``timings_ms``); this wraps their public entry
    points on the instances so they need no knowledge of Prometheus.
    """
    from carrag.services.errors import DependencyUnavailable

    container.embedder.on_batch = metrics.observe_embedding
    container.ingestion.on_indexed = metrics.chunks_indexed.inc
    metrics.watch_jobs(container.jobs.counts_by_state)

    def job_finished(job: Any) -> None:
        metrics.jobs_finished.labels(job.state).inc()
        if isinstance(job.exception, DependencyUnavailable):
            metrics.dependency_error(job.exception.component)

    container.jobs.on_finished = job_finished

    container.search.search = _observe_search(_unwrapped(container.search.search), metrics)
    container.answers.stream_answer = _observe_answer(_unwrapped(container.answers.stream_answer), metrics)
    for name in ("ingest_file", "ingest_url", "ingest_text"):
        setattr(container.ingestion, name, _observe_ingest(_unwrapped(getattr(container.ingestion, name)), metrics))


def _unwrapped(function: Callable[..., Any]) -> Callable[..., Any]:
    """The service's own method, so instrumenting a container again (a second app) does not stack."""
    return getattr(function, "__wrapped__", function)


def _observe_search(search: Callable[..., Any], metrics: Metrics) -> Callable[..., Any]:
    @functools.wraps(search)
    async def observed(*args: Any, **kwargs: Any) -> Any:
        outcome = await search(*args, **kwargs)
        metrics.observe_stages("query", outcome.timings_ms, SEARCH_STAGES)
        return outcome

    return observed


def _observe_answer(stream_answer: Callable[..., Any], metrics: Metrics) -> Callable[..., Any]:
    @functools.wraps(stream_answer)
    async def observed(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with contextlib.aclosing(stream_answer(*args, **kwargs)) as events:
            async for event in events:
                if event.kind == "done":
                    metrics.observe_stages("query", event.data.timings_ms, GENERATION_STAGES)
                yield event

    return observed


def _observe_ingest(ingest: Callable[..., Any], metrics: Metrics) -> Callable[..., Any]:
    @functools.wraps(ingest)
    async def observed(*args: Any, **kwargs: Any) -> Any:
        result = await ingest(*args, **kwargs)
        metrics.documents_ingested.labels(result.status).inc()
        metrics.observe_stages("ingest", result.timings_ms, INGEST_STAGES)
        return result

    return observed

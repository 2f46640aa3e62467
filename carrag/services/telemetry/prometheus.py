"""Prometheus metrics on a registry of their own: HTTP latency and requests in flight (fed by
`RequestLogMiddleware`), the services' `Telemetry` events, and dependency failures (503s answered and
failed ingest jobs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from carrag.services.telemetry.base import Pipeline

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# The stages exported per pipeline (one label value each, so the series stay bounded): SearchService
# and AnswerService report the query stages, IngestionService the ingest stages.
PIPELINE_STAGES: dict[Pipeline, tuple[str, ...]] = {
    "query": (
        "embed_query",
        "retrieve",
        "fuse",
        "rerank",
        "expand",
        "total",
        "select",
        "generate",
        "first_token",
        "check",
    ),
    "ingest": ("fetch", "parse", "tag", "chunk", "embed", "index"),
}
JOB_STATES = ("queued", "parsing", "tagging", "chunking", "embedding", "indexing", "done", "failed", "cancelled")
UNMATCHED_ROUTE = "unmatched"  # requests no route matched (404s): one label, not one per path


class _JobStates(Collector):
    """``carrag_ingest_jobs{state}``, read from the job manager at scrape time."""

    def __init__(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self.counts = counts

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "carrag_ingest_jobs", "Ingest jobs this process runs or recently ran, by state.", labels=["state"]
        )
        counts = self.counts()
        for state in JOB_STATES:
            family.add_metric([state], counts.get(state, 0))
        yield family


class PrometheusTelemetry:
    """A `Telemetry` that keeps Prometheus metrics; ``render`` is the /metrics answer."""

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
            "select (sentence scoring), generate, first_token, check (grounding); pipeline=ingest: fetch, parse, tag, chunk, embed, index.",
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
        self.indexed_chunks = Counter("carrag_chunks_indexed", "Chunks written to the store.", registry=r)
        self.documents_ingested = Counter(
            "carrag_documents_ingested",
            "Ingests that completed, by outcome (ingested, unchanged, updated, duplicate).",
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

    # --- the Telemetry events ------------------------------------------------------------------------
    def stages(self, pipeline: Pipeline, timings_ms: Mapping[str, float]) -> None:
        for stage in PIPELINE_STAGES[pipeline]:
            if stage in timings_ms:
                self.stage_seconds.labels(pipeline, stage).observe(timings_ms[stage] / 1000)

    def texts_embedded(self, count: int, seconds: float) -> None:
        self.embedded_texts.inc(count)
        self.embedding_seconds.inc(seconds)

    def chunks_indexed(self, count: int) -> None:
        self.indexed_chunks.inc(count)

    def document_ingested(self, status: str) -> None:
        self.documents_ingested.labels(status).inc()

    def job_finished(self, state: str) -> None:
        self.jobs_finished.labels(state).inc()

    def dependency_failed(self, component: str) -> None:
        self.dependency_errors.labels(component).inc()

    def watch_jobs(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self.registry.register(_JobStates(counts))

    # --- HTTP (RequestLogMiddleware) -------------------------------------------------------------------
    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.request_seconds.labels(method, route, str(status)).observe(seconds)

    # --- exporting ----------------------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

"""Phase 3 of `carrag bench`: grow the store to a size with copies of the ingested documents (vectors
already computed, nothing re-embedded), let the search indexes catch up, reopen it and time
``POST /search`` through the real ASGI app, with the memory and disk it takes."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil

from carrag.bench.ingest_speed import PreparedDocument
from carrag.bench.measuring import Latency, PeakRss, disk_bytes
from carrag.services.container import Container
from carrag.services.ids import content_hash, new_document_id
from carrag.services.models import DocumentRecord
from carrag.services.stores.sqlite import SqliteStore

BULK_DOCUMENTS = 2_000  # documents per transaction of `SqliteStore.write_documents`


@dataclass(slots=True)
class QueryFigures:
    chunks: int
    documents: int
    search: Latency
    search_rerank: Latency | None
    rerank_note: str | None
    embed_query: Latency
    first_query_ms: float  # the first query after reopening the store
    stage_medians_ms: dict[str, float]
    peak_rss_mb: float  # the whole phase: growing, index catch-up, reopening, queries
    grow_seconds: float
    index_seconds: float = 0.0  # the search indexes catching up with the grown store
    open_ms: float = 0.0  # Store.open() on the grown store
    disk_mb: float = 0.0
    peak_rss_serving_mb: float = 0.0  # reopening the store and the queries only
    peak_anon_serving_mb: float = 0.0  # ... of which anonymous (not memory-mapped file pages)

    def as_dict(self) -> dict[str, Any]:
        shown = {field.name: _shown(getattr(self, field.name)) for field in dataclasses.fields(self)}
        load = [round(x, 2) for x in psutil.getloadavg()]
        return shown | {"open_and_first_query_ms": round(self.open_ms + self.first_query_ms, 1), "load_average": load}


def _shown(value: Any) -> Any:
    """A figure as the JSON report shows it: latencies as percentiles, times and sizes to 0.1."""
    if isinstance(value, Latency):
        return value.as_dict()
    return round(value, 1) if isinstance(value, float) else value


def copy_record(dataset_name: str, document: PreparedDocument, copy: int) -> DocumentRecord:
    """The record of copy number ``copy`` of a dataset document, under a new id and source id."""
    return DocumentRecord(
        document_id=new_document_id(),
        filename=f"{dataset_name}/copy-{copy}/{document.record_id}",
        source_id=f"{dataset_name}:{document.record_id}#copy-{copy}",
        source_type="text",
        content_hash=content_hash(document.text),
        chunk_count=len(document.chunks),
        tags=[],
        metadata={"bench_copy": copy},
        created_at=datetime.now(UTC).isoformat(),
        title=document.title,
        external_id=document.record_id,
    )


async def grow_store(
    container: Container,
    documents: list[PreparedDocument],
    target_chunks: int,
    dataset_name: str,
    copy_counter: list[int],
) -> int:
    """Write copies of ``documents`` under new ids until the embedded store holds ``target_chunks``,
    `BULK_DOCUMENTS` to a transaction."""
    store = container.store
    assert isinstance(store, SqliteStore), "the bench grows the embedded store (eval_settings)"
    identity = await container.embedder.embedding_identity()
    current = await store.count_chunks()
    while current < target_chunks:
        copy_counter[0] += 1
        batch: list[PreparedDocument] = []
        for document in documents:
            if current >= target_chunks:
                break
            batch.append(document)
            current += len(document.chunks)
        for offset in range(0, len(batch), BULK_DOCUMENTS):
            rows = []
            for document in batch[offset : offset + BULK_DOCUMENTS]:
                assert document.vectors is not None  # embedded in the ingestion phase
                rows.append((copy_record(dataset_name, document, copy_counter[0]), document.chunks, document.vectors))
            await store.write_documents(rows, identity)
    return await store.count_chunks()


async def bench_queries(
    container: Container, questions: Sequence[str], warmup: int
) -> tuple[Latency, Latency | None, str | None, Latency, float, dict[str, float]]:
    from carrag.api.main import create_app

    app = create_app(container=container)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://carrag.bench", timeout=120) as client:

        async def timed(question: str, rerank: bool) -> tuple[float, dict[str, Any]]:
            started = time.perf_counter()
            response = await client.post("/search", json={"question": question, "top_k": 5, "rerank": rerank})
            elapsed = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            return elapsed, response.json()

        first_ms, _ = await timed(questions[0], False)
        for question in questions[1 : 1 + warmup]:
            await timed(question, False)
        measured = list(questions[1 + warmup :]) or list(questions)
        plain: list[float] = []
        stages: dict[str, list[float]] = {}
        for question in measured:
            elapsed, body = await timed(question, False)
            plain.append(elapsed)
            for stage, value in body.get("timings_ms", {}).items():
                stages.setdefault(stage, []).append(value)
        reranked, note = None, None
        if container.reranker.available:
            reranked = Latency([(await timed(question, True))[0] for question in measured])
        else:
            note = f"n/a: {container.reranker.unavailable_reason}"

    backend = container.embedder.backend
    embed = []
    for question in measured:
        started = time.perf_counter()
        await backend.embed([question], "query")
        embed.append((time.perf_counter() - started) * 1000)
    medians = {stage: round(statistics.median(values), 2) for stage, values in stages.items()}
    return Latency(plain), reranked, note, Latency(embed), first_ms, medians


async def measure_at_size(
    container: Container,
    documents: list[PreparedDocument],
    size: int,
    dataset_name: str,
    copy_counter: list[int],
    questions: Sequence[str],
    warmup: int,
    sqlite_path: Path,
) -> QueryFigures:
    """Grow the store to ``size`` chunks, let its indexes catch up, reopen it and time the queries."""
    with PeakRss() as rss:
        started = time.perf_counter()
        chunks = await grow_store(container, documents, size, dataset_name, copy_counter)
        grow_seconds = time.perf_counter() - started
        page = await container.store.list_documents(offset=0, limit=1)
        started = time.perf_counter()
        assert isinstance(container.store, SqliteStore)
        await container.store.sync_indexes()
        index_seconds = time.perf_counter() - started
        await container.store.close()
        with PeakRss() as serving:
            started = time.perf_counter()
            await container.store.open()
            open_ms = (time.perf_counter() - started) * 1000
            search, reranked, note, embed, first_ms, stages = await bench_queries(container, questions, warmup)
    return QueryFigures(
        chunks,
        page.total,
        search,
        reranked,
        note,
        embed,
        first_ms,
        stages,
        rss.peak_mb,
        grow_seconds,
        index_seconds,
        open_ms,
        disk_bytes(sqlite_path) / 2**20,
        serving.peak_mb,
        serving.peak_anon_mb,
    )


def describe(figures: QueryFigures) -> str:
    """The one report line of a store size."""
    search, embed, stages = figures.search, figures.embed_query, figures.stage_medians_ms
    return (
        f"Query at {figures.chunks} chunks: /search p50 {search.p50:.1f} ms, p95 {search.p95:.1f} ms; "
        f"query embedding p50 {embed.p50:.1f} ms; legs p50 BM25 {stages.get('bm25_leg', 0):.1f} ms, "
        f"kNN {stages.get('knn_leg', 0):.1f} ms; open + first query {figures.open_ms + figures.first_query_ms:.0f} ms; "
        f"disk {figures.disk_mb:.0f} MB; peak RSS {figures.peak_rss_mb:.0f} MB "
        f"(serving {figures.peak_rss_serving_mb:.0f} MB, anonymous {figures.peak_anon_serving_mb:.0f} MB); "
        f"grow {figures.grow_seconds:.0f} s, index catch-up {figures.index_seconds:.0f} s; "
        f"load {figures.as_dict()['load_average']}; rerank "
        + (f"p50 {rerank.p50:.1f} ms, p95 {rerank.p95:.1f} ms" if (rerank := figures.search_rerank) else "n/a")
    )

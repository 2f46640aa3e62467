"""`carrag bench`: the speed figures of the embedded default, measured side by side in one run.

1. PDF extraction: pages/s of the configured PDF parser on one PDF.
2. Ingestion: chunks/s of a BEIR corpus through the real pipeline (`IngestionService.ingest_many`),
   next to the raw embedding backend's chunks/s on exactly the same chunk texts. Their ratio is
   what the pipeline costs on top of the model.
3. Query: p50/p95 latency of ``POST /search`` (no generation) through the real ASGI app, at each
   store size, with and without reranking, next to the query embedding alone, and the medians of
   each search leg (BM25, kNN) as the service reports them. The store grows to each size by writing
   copies of the ingested documents under new ids straight into the store with the vectors already
   computed (nothing is re-embedded; the SQLite store takes them in bulk transactions). Then the
   search indexes catch up, the store is closed and reopened, and the time to open it and answer
   the first query is measured, with the store's size on disk.
4. Memory: peak RSS of this process (which is the service: store, models and app run in it)
   while growing the store and, separately, while serving (reopen + queries).

The embedding cache is off (``EMBED_CACHE_SIZE=0``) so that every query and chunk is embedded.
"""

from __future__ import annotations

import asyncio
import math
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from carrag.bench.beir import BeirDataset, load_beir
from carrag.bench.ocr import bench_ocr
from carrag.bench.runner import eval_settings, ingest_corpus
from carrag.services.chunking import chunk_document
from carrag.services.container import Container, build_container
from carrag.services.embedders.base import EmbeddingBackend
from carrag.services.errors import InvalidInput
from carrag.services.ids import content_hash, new_document_id
from carrag.services.ingestion import embedding_input
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.models import Chunk, DocumentRecord, ParsedDocument
from carrag.services.parsers import parse_file
from carrag.services.settings import Settings

Report = Callable[[str], None]


@dataclass(slots=True)
class BenchConfig:
    pdf: Path
    dataset: Path
    split: str = "train"
    sizes: tuple[int, ...] = (20_000, 100_000)
    queries: int = 200
    limit_documents: int | None = None
    warmup_queries: int = 5
    ocr_pages: int = 3  # scanned copies of the PDF's first pages read by OCR (0: no OCR row)

    @classmethod
    def quick(cls, pdf: Path, dataset: Path, split: str = "train") -> BenchConfig:
        """Small sizes that keep the whole run to a few seconds (tests, smoke checks)."""
        return cls(
            pdf=pdf,
            dataset=dataset,
            split=split,
            sizes=(100, 300),
            queries=10,
            limit_documents=50,
            warmup_queries=1,
            ocr_pages=0,
        )


@dataclass(slots=True)
class Latency:
    samples_ms: list[float]

    @property
    def p50(self) -> float:
        return float(np.percentile(self.samples_ms, 50)) if self.samples_ms else math.nan

    @property
    def p95(self) -> float:
        return float(np.percentile(self.samples_ms, 95)) if self.samples_ms else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {"p50_ms": round(self.p50, 2), "p95_ms": round(self.p95, 2), "n": len(self.samples_ms)}


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
        return {
            "chunks": self.chunks,
            "documents": self.documents,
            "search": self.search.as_dict(),
            "search_rerank": self.search_rerank.as_dict() if self.search_rerank else None,
            "rerank_note": self.rerank_note,
            "embed_query": self.embed_query.as_dict(),
            "first_query_ms": round(self.first_query_ms, 1),
            "stage_medians_ms": self.stage_medians_ms,
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "grow_seconds": round(self.grow_seconds, 1),
            "index_seconds": round(self.index_seconds, 1),
            "open_ms": round(self.open_ms, 1),
            "open_and_first_query_ms": round(self.open_ms + self.first_query_ms, 1),
            "disk_mb": round(self.disk_mb, 1),
            "peak_rss_serving_mb": round(self.peak_rss_serving_mb, 1),
            "peak_anon_serving_mb": round(self.peak_anon_serving_mb, 1),
            "load_average": [round(x, 2) for x in psutil.getloadavg()],
        }


@dataclass(slots=True)
class BenchReport:
    machine: dict[str, Any]
    pdf: dict[str, Any] = field(default_factory=dict)
    ocr: dict[str, Any] = field(default_factory=dict)
    ingest: dict[str, Any] = field(default_factory=dict)
    queries: list[QueryFigures] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "pdf": self.pdf,
            "ocr": self.ocr,
            "ingest": self.ingest,
            "queries": [q.as_dict() for q in self.queries],
        }


class PeakRss:
    """Peak resident memory of a process (default: this one) while the block runs, sampled every
    ``interval`` seconds; ``baseline_bytes`` is its memory when the sampler was made.

    RSS counts anonymous memory (heap, model weights, buffers) and the pages of memory-mapped files
    the process has touched (the HNSW graph, tantivy's segments, shared libraries). The second kind
    is clean page cache the kernel reclaims under pressure, so the anonymous peak is reported too
    (``peak_anon_bytes``: RSS minus resident file-backed and shared pages, /proc/<pid>/statm)."""

    def __init__(self, interval: float = 0.01, pid: int | None = None) -> None:
        self.interval = interval
        self._process = psutil.Process(pid)
        self.baseline_bytes = self._process.memory_info().rss
        self.peak_bytes = self.baseline_bytes
        self.peak_anon_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)

    def _measure(self) -> None:
        memory = self._process.memory_info()
        self.peak_bytes = max(self.peak_bytes, memory.rss)
        self.peak_anon_bytes = max(self.peak_anon_bytes, memory.rss - getattr(memory, "shared", 0))

    def _sample(self) -> None:
        while True:
            self._measure()
            if self._stop.wait(self.interval):
                return

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20

    @property
    def peak_anon_mb(self) -> float:
        return self.peak_anon_bytes / 2**20

    @property
    def growth_mb(self) -> float:
        return (self.peak_bytes - self.baseline_bytes) / 2**20

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._measure()


def machine_facts() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": psutil.cpu_count(logical=True),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in psutil.getloadavg()],
    }


# --- phase 1: PDF extraction --------------------------------------------------------------------------
def bench_pdf(path: Path, settings: Settings) -> dict[str, Any]:
    if not path.is_file():
        raise InvalidInput(f"PDF {path} does not exist (give another with --pdf).")
    data = path.read_bytes()
    import pymupdf  # noqa: F401  - the library's import time is not extraction time

    with PeakRss() as rss:
        started = time.perf_counter()
        parsed = parse_file(data, path.name, max_pdf_pages=settings.max_pdf_pages, pdf_mode=settings.pdf_mode)
        seconds = time.perf_counter() - started
    pages = int(parsed.metadata.get("total_pages") or len(parsed.page_spans) or 1)
    return {
        "file": str(path),
        "pages": pages,
        "characters": len(parsed.text),
        "seconds": round(seconds, 3),
        "pages_per_second": round(pages / seconds, 1),
        "pdf_mode": settings.pdf_mode,
        "peak_rss_mb": round(rss.peak_mb, 1),
    }


# --- phase 2: ingestion --------------------------------------------------------------------------------
@dataclass(slots=True)
class PreparedDocument:
    """A corpus record as the pipeline chunks it, with the raw backend's vectors for its chunks."""

    record_id: str
    title: str | None
    text: str
    chunks: list[Chunk]
    vectors: np.ndarray | None = None


def prepare_documents(dataset: BeirDataset, settings: Settings) -> list[PreparedDocument]:
    prepared = []
    for record in dataset.corpus:
        text = record.text if record.text.strip() else record.title
        parsed = ParsedDocument(text=text, filename=record.doc_id, source_type="text", title=record.title or None)
        chunks = chunk_document(
            parsed, settings.chunking_strategy, settings.chunk_size, settings.chunk_overlap, settings.min_chunk_size
        )
        prepared.append(PreparedDocument(record.doc_id, record.title or None, text, chunks))
    return prepared


def embedding_texts(document: PreparedDocument) -> list[str]:
    parsed = ParsedDocument(text=document.text, filename=document.record_id, source_type="text", title=document.title)
    return [embedding_input(chunk, parsed) for chunk in document.chunks]


async def raw_embed(backend: EmbeddingBackend, documents: list[PreparedDocument], batch_size: int) -> tuple[int, float]:
    """The backend alone on the pipeline's chunk texts, sorted by length and sent in batches of
    ``batch_size`` (the model's best case). Keeps each document's vectors for the query phase."""
    texts = [text for document in documents for text in embedding_texts(document)]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    started = time.perf_counter()
    parts = [
        await backend.embed([texts[i] for i in order[offset : offset + batch_size]], "document")
        for offset in range(0, len(order), batch_size)
    ]
    seconds = time.perf_counter() - started
    if parts:
        sorted_vectors = np.vstack(parts)
        vectors = np.empty_like(sorted_vectors)
        vectors[order] = sorted_vectors
        position = 0
        for document in documents:
            document.vectors = vectors[position : position + len(document.chunks)]
            position += len(document.chunks)
    return len(texts), seconds


async def bench_ingestion(
    container: Container,
    backend: EmbeddingBackend,
    dataset: BeirDataset,
    documents: list[PreparedDocument],
    batch_size: int,
    slices: int = 6,
) -> dict[str, Any]:
    """Pipeline and raw embedder on the same chunks, interleaved slice by slice (alternating which
    goes first) so that a change in machine load affects both figures alike."""
    slices = max(1, min(slices, len(documents)))
    bounds = [round(i * len(documents) / slices) for i in range(slices + 1)]
    pipeline_chunks = raw_chunks = 0
    pipeline_seconds = raw_seconds = 0.0
    with PeakRss() as rss:
        for index in range(slices):
            low, high = bounds[index], bounds[index + 1]
            part = replace(dataset, corpus=dataset.corpus[low:high])

            async def pipeline(part: BeirDataset = part) -> None:
                nonlocal pipeline_chunks, pipeline_seconds
                started = time.perf_counter()
                pipeline_chunks += await ingest_corpus(container, part)
                pipeline_seconds += time.perf_counter() - started

            async def raw(low: int = low, high: int = high) -> None:
                nonlocal raw_chunks, raw_seconds
                count, seconds = await raw_embed(backend, documents[low:high], batch_size)
                raw_chunks += count
                raw_seconds += seconds

            for step in (pipeline, raw) if index % 2 == 0 else (raw, pipeline):
                await step()
    return {
        "dataset": dataset.name,
        "pipeline": {
            "documents": len(dataset.corpus),
            "chunks": pipeline_chunks,
            "seconds": round(pipeline_seconds, 2),
            "chunks_per_second": round(pipeline_chunks / pipeline_seconds, 1),
        },
        "raw_embedder": {
            "chunks": raw_chunks,
            "seconds": round(raw_seconds, 2),
            "chunks_per_second": round(raw_chunks / raw_seconds, 1),
        },
        "pipeline_over_raw": round(raw_seconds / pipeline_seconds * pipeline_chunks / max(raw_chunks, 1), 3),
        "slices": slices,
        "peak_rss_mb": round(rss.peak_mb, 1),
    }


# --- phase 3: queries ------------------------------------------------------------------------------------
async def grow_store(
    container: Container,
    documents: list[PreparedDocument],
    target_chunks: int,
    dataset_name: str,
    copy_counter: list[int],
) -> int:
    """Write copies of ``documents`` under new ids until the store holds ``target_chunks``."""
    store = container.store
    identity = await container.embedder.embedding_identity()
    current = await store.count_chunks()
    gate = asyncio.Semaphore(8)
    bulk = getattr(store, "write_documents", None)  # one transaction per batch where the store has it

    def copy_record(document: PreparedDocument, copy: int) -> DocumentRecord:
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

    async def write(document: PreparedDocument, copy: int) -> None:
        assert document.vectors is not None
        async with gate:
            await store.write_document(copy_record(document, copy), document.chunks, document.vectors, identity)

    async def write_bulk(batch: list[PreparedDocument], copy: int) -> None:
        assert bulk is not None  # called only where the store has write_documents
        for offset in range(0, len(batch), BULK_DOCUMENTS):
            part = batch[offset : offset + BULK_DOCUMENTS]
            await bulk([(copy_record(d, copy), d.chunks, d.vectors) for d in part], identity)

    while current < target_chunks:
        copy_counter[0] += 1
        batch: list[PreparedDocument] = []
        for document in documents:
            if current >= target_chunks:
                break
            batch.append(document)
            current += len(document.chunks)
        if bulk is not None:
            await write_bulk(batch, copy_counter[0])
        else:
            await asyncio.gather(*(write(document, copy_counter[0]) for document in batch))
    return await store.count_chunks()


BULK_DOCUMENTS = 2_000


def disk_bytes(path: Path) -> int:
    """The SQLite file, its WAL and everything beside it that belongs to it (``<file>.*``)."""
    total = 0
    for item in path.parent.glob(path.name + "*"):
        files = item.rglob("*") if item.is_dir() else [item]
        total += sum(f.stat().st_size for f in files if f.is_file())
    return total


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


# --- the whole run ---------------------------------------------------------------------------------------
async def run_bench(
    config: BenchConfig,
    base_settings: Settings,
    *,
    report: Report = print,
    embedding_backend: EmbeddingBackend | None = None,
    work_dir: Path | None = None,
) -> BenchReport:
    result = BenchReport(machine=machine_facts())
    dataset = load_beir(config.dataset, config.split)
    if config.limit_documents is not None:
        dataset.corpus = dataset.corpus[: config.limit_documents]
    questions = list(dataset.queries.values())[: config.queries + config.warmup_queries + 1]

    report(f"PDF extraction: {config.pdf}")
    result.pdf = await asyncio.to_thread(bench_pdf, config.pdf, base_settings)
    report(f"  {result.pdf['pages']} pages in {result.pdf['seconds']} s = {result.pdf['pages_per_second']} pages/s")
    if config.ocr_pages:
        report(f"OCR: scanned copies of the first {config.ocr_pages} pages")
        result.ocr = await asyncio.to_thread(bench_ocr, config.pdf, base_settings, config.ocr_pages)
        report(f"  {result.ocr}")

    with tempfile.TemporaryDirectory(prefix="carrag-bench-", dir=work_dir) as directory:
        settings = eval_settings(base_settings, Path(directory) / "bench.db").model_copy(update={"embed_cache_size": 0})
        container = await build_container(settings, embedding_backend=embedding_backend, llm=ExtractiveLLM("bench"))
        try:
            backend = container.embedder.backend
            await backend.embed(["warm up the embedding model"] * 4, "document")
            documents = prepare_documents(dataset, settings)

            report(f"Ingestion: {len(dataset.corpus)} {dataset.name} documents, pipeline and raw embedder interleaved")
            result.ingest = await bench_ingestion(container, backend, dataset, documents, settings.embed_batch_size)
            pipeline, raw = result.ingest["pipeline"], result.ingest["raw_embedder"]
            report(
                f"  pipeline: {pipeline['chunks']} chunks in {pipeline['seconds']} s = "
                f"{pipeline['chunks_per_second']} chunks/s"
            )
            report(
                f"  raw embedder: {raw['chunks']} chunks in {raw['seconds']} s = {raw['chunks_per_second']} chunks/s"
            )
            report(f"  pipeline / raw = {result.ingest['pipeline_over_raw']}")

            copies = [0]
            for size in config.sizes:
                with PeakRss() as rss:
                    started = time.perf_counter()
                    chunks = await grow_store(container, documents, size, dataset.name, copies)
                    grow_seconds = time.perf_counter() - started
                    page = await container.store.list_documents(offset=0, limit=1)
                    started = time.perf_counter()
                    sync = getattr(container.store, "sync_indexes", None)
                    if sync is not None:
                        await sync()
                    index_seconds = time.perf_counter() - started
                    await container.store.close()
                    with PeakRss() as serving:
                        started = time.perf_counter()
                        await container.store.open()
                        open_ms = (time.perf_counter() - started) * 1000
                        search, reranked, note, embed, first_ms, stages = await bench_queries(
                            container, questions, config.warmup_queries
                        )
                figures = QueryFigures(
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
                    disk_bytes(settings.resolved_sqlite_path) / 2**20,
                    serving.peak_mb,
                    serving.peak_anon_mb,
                )
                result.queries.append(figures)
                report(
                    f"Query at {chunks} chunks: /search p50 {search.p50:.1f} ms, p95 {search.p95:.1f} ms; "
                    f"query embedding p50 {embed.p50:.1f} ms; legs p50 BM25 {stages.get('bm25_leg', 0):.1f} ms, "
                    f"kNN {stages.get('knn_leg', 0):.1f} ms; open + first query {open_ms + first_ms:.0f} ms; "
                    f"disk {figures.disk_mb:.0f} MB; peak RSS {rss.peak_mb:.0f} MB (serving {serving.peak_mb:.0f} MB, "
                    f"anonymous {serving.peak_anon_mb:.0f} MB); "
                    f"grow {grow_seconds:.0f} s, index catch-up {index_seconds:.0f} s; "
                    f"load {figures.as_dict()['load_average']}; rerank {'n/a' if note else 'measured'}"
                )
        finally:
            if embedding_backend is None:
                await container.aclose()
            else:  # the caller's backend stays open
                await container.fetcher.aclose()
                await container.store.close()
    return result

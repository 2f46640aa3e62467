"""`carrag bench`: the speed figures of the embedded default, measured side by side in one run
(docs/benchmarks.md): PDF extraction and ingestion against the raw embedder (`ingest_speed.py`), OCR
(`ocr.py`), ``POST /search`` through the real ASGI app as the store grows (`query_speed.py`), and the
store while documents arrive and change (`store_states.py`), with peak RSS and disk size
(`measuring.py`). The embedding cache is off (``EMBED_CACHE_SIZE=0``) so every query and chunk is
embedded.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from carrag.bench.beir import BeirDataset, load_beir
from carrag.bench.ingest_speed import PreparedDocument, bench_ingestion, bench_pdf, prepare_documents
from carrag.bench.measuring import machine_facts
from carrag.bench.ocr import bench_ocr
from carrag.bench.peers import PeerProcess
from carrag.bench.query_speed import QueryFigures, describe, measure_at_size
from carrag.bench.runner import eval_settings
from carrag.bench.store_states import PeerFigures, StateBench, StateFigures, describe_comparison, describe_state
from carrag.services.container import Container, build_container
from carrag.services.embedders.base import EmbeddingBackend
from carrag.services.llms.extractive import ExtractiveLLM
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
    states: bool = True  # phase 4: the store while documents arrive and change (store_states.py)
    peers: tuple[str, ...] = ()  # with phase 4: numpy, chroma, lancedb (peers.py)

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
class BenchReport:
    machine: dict[str, Any]
    pdf: dict[str, Any] = field(default_factory=dict)
    ocr: dict[str, Any] = field(default_factory=dict)
    ingest: dict[str, Any] = field(default_factory=dict)
    queries: list[QueryFigures] = field(default_factory=list)
    states: list[StateFigures] = field(default_factory=list)
    peers: list[PeerFigures] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        shown = {entry.name: getattr(self, entry.name) for entry in fields(self)}
        return {
            name: [row.as_dict() for row in value] if isinstance(value, list) else value
            for name, value in shown.items()
        }


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

    machine = result.machine
    report(
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gb']} GB; {machine['date']}; "
        f"load average at start {machine['load_average_at_start']}"
    )
    report(f"PDF extraction: {config.pdf} ({base_settings.pdf_mode})")
    pdf = result.pdf = await asyncio.to_thread(bench_pdf, config.pdf, base_settings)
    report(
        f"  {pdf['pages']} pages in {pdf['seconds']} s = {pdf['pages_per_second']} pages/s; "
        f"peak RSS {pdf['peak_rss_mb']} MB"
    )
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
            report(
                f"  pipeline / raw = {result.ingest['pipeline_over_raw']}; peak RSS {result.ingest['peak_rss_mb']} MB"
            )

            copies = [0]
            for size in config.sizes:
                figures = await measure_at_size(
                    container,
                    documents,
                    size,
                    dataset.name,
                    copies,
                    questions,
                    config.warmup_queries,
                    settings.resolved_sqlite_path,
                )
                result.queries.append(figures)
                report(describe(figures))
                if config.states:
                    report(
                        f"States at {figures.chunks} chunks"
                        + (f", beside {', '.join(config.peers)}" if config.peers else "")
                    )
                    bench = await run_states(
                        container, dataset, documents, config, settings, copies, Path(directory), report
                    )
                    result.states.extend(bench.states)
                    result.peers.extend(bench.comparison)
        finally:
            if embedding_backend is None:
                await container.aclose()
            else:  # the caller's backend stays open
                await container.fetcher.aclose()
                await container.store.close()
    return result


async def run_states(
    container: Container,
    dataset: BeirDataset,
    documents: list[PreparedDocument],
    config: BenchConfig,
    settings: Settings,
    copies: list[int],
    directory: Path,
    report: Report,
) -> StateBench:
    """Phase 4 on the store phase 3 grew: reopened, ingesting, updating (and the peers beside it)."""
    from carrag.api.main import create_app

    questions = list(dataset.queries.items())[: config.queries]
    vectors = np.asarray(await container.embedder.backend.embed([q for _, q in questions], "query"), np.float32)
    peers = [PeerProcess(name, directory / f"peer-{name}", vectors.shape[1]) for name in config.peers]
    transport = httpx.ASGITransport(app=create_app(container=container))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://carrag.bench", timeout=120) as client:
            bench = StateBench(
                container,
                client,
                dataset,
                documents,
                questions,
                vectors,
                settings.resolved_sqlite_path,
                copies,
                peers,
                leg_k=5 * settings.retrieval_k_multiplier,
            )
            await bench.run()
    finally:
        for peer in peers:
            peer.close()
    for figures in bench.states:
        report(describe_state(figures))
    for line in describe_comparison(bench.comparison):  # this size only
        report(line)
    return bench

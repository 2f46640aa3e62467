"""`carrag eval`: ingest a BEIR corpus into a fresh store through the real pipeline, search every judged
query in each mode (BM25, kNN, hybrid, hybrid + rerank) by `SearchService.search` without expansion,
and score with ir-measures. A document ranks where its best chunk ranks; each leg retrieves
``100 × ceil(chunks / documents)`` chunks, enough for Recall@100.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import ir_measures
from ir_measures import RR, R, nDCG

from carrag.bench.beir import BeirDataset
from carrag.services.container import Container
from carrag.services.errors import CarragError, InvalidInput
from carrag.services.ingest_bulk import BulkDocument
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.retrieval.search import SearchHit
from carrag.services.settings import Settings
from carrag.services.vocabulary import SearchMode

# Display name -> ir-measures measure. MRR@10 is reciprocal rank cut at 10 (RR@10).
MEASURES: dict[str, Any] = {
    "nDCG@10": nDCG @ 10,
    "Recall@10": R @ 10,
    "Recall@100": R @ 100,
    "MRR@10": RR @ 10,
}

# Mode name -> (search mode, rerank) and its label in the printed table.
MODES: dict[str, tuple[SearchMode, bool]] = {
    "bm25": (SearchMode.BM25, False),
    "knn": (SearchMode.KNN, False),
    "hybrid": (SearchMode.HYBRID, False),
    "hybrid+rerank": (SearchMode.HYBRID, True),
}
MODE_LABELS = {"bm25": "BM25", "knn": "kNN", "hybrid": "hybrid (RRF)", "hybrid+rerank": "hybrid + rerank"}

DOCUMENTS_RETRIEVED = 100  # the deepest cut-off measured (Recall@100)
MAX_DEPTH = 1000


class EvalProgress(Protocol):
    """Progress of the long phases; the CLI draws it as a rich progress bar."""

    def start(self, phase: str, total: int) -> None: ...

    def advance(self, phase: str, amount: int = 1) -> None: ...


class _NoProgress:
    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self, phase: str, amount: int = 1) -> None:
        pass


@dataclass(slots=True)
class ModeResult:
    mode: str
    metrics: dict[str, float] | None  # None when the mode could not run
    note: str | None = None
    seconds: float = 0.0
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)  # query id -> measure -> value

    @property
    def label(self) -> str:
        return MODE_LABELS.get(self.mode, self.mode)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "label": self.label,
            "available": self.metrics is not None,
            "metrics": self.metrics,
            "note": self.note,
            "seconds": round(self.seconds, 2),
        }


@dataclass(slots=True)
class EvalReport:
    dataset: str
    split: str
    documents: int
    chunks: int
    queries: int
    depth: int
    results: list[ModeResult]
    ingest_seconds: float
    settings: dict[str, Any]

    def result(self, mode: str) -> ModeResult:
        return next(r for r in self.results if r.mode == mode)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "documents": self.documents,
            "chunks": self.chunks,
            "queries": self.queries,
            "depth_chunks_per_leg": self.depth,
            "ingest_seconds": round(self.ingest_seconds, 2),
            "measures": {name: str(measure) for name, measure in MEASURES.items()},
            "metrics_library": f"ir-measures {ir_measures.__version__}",
            "settings": self.settings,
            "results": [r.as_dict() for r in self.results],
        }


def fresh_store_settings(base: Settings, store_path: Path, **overrides: Any) -> Settings:
    """A fresh SQLite file and no auto-tagging; everything else as configured, unless overridden."""
    return base.model_copy(
        update={
            "store": "sqlite",
            "sqlite_path": store_path,
            "data_dir": store_path.parent,
            "reranker_cache_dir": base.resolved_reranker_cache_dir,  # the installed model, not the temp dir
            "tagger": "off",
            **overrides,
        }
    )


def eval_settings(base: Settings, store_path: Path) -> Settings:
    """The settings of an evaluation run: a fresh SQLite file, no auto-tagging, deep result lists."""
    return fresh_store_settings(base, store_path, max_top_k=MAX_DEPTH, rerank_enabled=False)


def tuning_snapshot(settings: Settings) -> dict[str, Any]:
    """The settings that shape retrieval quality, recorded with every result."""
    names = (
        "embedder",
        "chunk_size",
        "chunk_overlap",
        "chunking_strategy",
        "rrf_k",
        "reranker_model",
        "local_embedding_max_tokens",
    )
    return {name: getattr(settings, name) for name in names if hasattr(settings, name)}


def parse_modes(text: str | Sequence[str] | None) -> list[str]:
    if text is None:
        return list(MODES)
    names = [part.strip() for part in (text.split(",") if isinstance(text, str) else text) if part.strip()]
    unknown = [name for name in names if name not in MODES]
    if unknown or not names:
        raise InvalidInput(f"Unknown mode(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(MODES)}.")
    return list(dict.fromkeys(names))


async def ingest_corpus(container: Container, dataset: BeirDataset, progress: EvalProgress | None = None) -> int:
    """Ingest every corpus record; returns the number of chunks written. Any failure is fatal."""
    progress = progress or _NoProgress()
    progress.start("ingest", len(dataset.corpus))
    documents = [
        BulkDocument(
            filename=f"{dataset.name}/{record.doc_id}",
            # A record with no text is still a document: its title is its content.
            text=record.text if record.text.strip() else record.title,
            options=IngestCommand(
                title=record.title or None, external_id=record.doc_id, source_id=f"{dataset.name}:{record.doc_id}"
            ),
        )
        for record in dataset.corpus
    ]
    failures: list[str] = []

    def done(position: int, result: object) -> None:
        progress.advance("ingest")
        if isinstance(result, CarragError):
            failures.append(f"{dataset.corpus[position].doc_id}: {result.message}")

    results = await container.ingestion.ingest_many(documents, on_result=done)
    if failures:
        raise InvalidInput(f"{len(failures)} corpus records could not be ingested, e.g. {failures[0]}")
    return sum(r.chunk_count for r in results if not isinstance(r, CarragError))


def ranked_documents(hits: Sequence[SearchHit], limit: int = DOCUMENTS_RETRIEVED) -> list[str]:
    """Document ids in the order of their best chunk."""
    seen: dict[str, None] = {}
    for hit in hits:
        external_id = hit.chunk.external_id
        if external_id is not None and external_id not in seen:
            seen[external_id] = None
            if len(seen) == limit:
                break
    return list(seen)


NO_RESULT = "__no_result__"  # stands in for an empty ranking so the query still counts (as 0)


def score_run(
    qrels: dict[str, dict[str, int]], run: dict[str, list[str]]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Mean and per-query measures of ranked document lists, computed by ir-measures."""
    scored_run = {
        qid: {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)} or {NO_RESULT: 0.0}
        for qid, docs in run.items()
    }
    for qid in qrels:
        scored_run.setdefault(qid, {NO_RESULT: 0.0})
    measures = list(MEASURES.values())
    names = {str(measure): name for name, measure in MEASURES.items()}
    aggregate = ir_measures.calc_aggregate(measures, qrels, scored_run)
    means = {names[str(measure)]: float(value) for measure, value in aggregate.items()}
    per_query: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(measures, qrels, scored_run):
        per_query.setdefault(metric.query_id, {})[names[str(metric.measure)]] = float(metric.value)
    return {name: means[name] for name in MEASURES}, per_query


def chunk_depth(documents: int, chunks: int) -> int:
    per_document = max(1, math.ceil(chunks / max(documents, 1)))
    return min(MAX_DEPTH, DOCUMENTS_RETRIEVED * per_document)


async def run_mode(
    container: Container,
    dataset: BeirDataset,
    mode: str,
    depth: int,
    *,
    rerank_depth: int = 100,
    concurrency: int = 4,
    progress: EvalProgress | None = None,
) -> ModeResult:
    progress = progress or _NoProgress()
    search_mode, rerank = MODES[mode]
    if rerank and not container.reranker.available:
        return ModeResult(mode, None, f"n/a: {container.reranker.unavailable_reason or 'no reranker installed'}")
    depth = min(depth, rerank_depth) if rerank else depth
    progress.start(mode, len(dataset.queries))
    gate = asyncio.Semaphore(concurrency)
    run: dict[str, list[str]] = {}
    started = time.perf_counter()

    async def one(query_id: str, question: str) -> None:
        async with gate:
            outcome = await container.search.search(
                SearchQuery(question, top_k=depth, mode=search_mode, rerank=rerank), expand=False, depth=depth
            )
        run[query_id] = ranked_documents(outcome.hits)
        progress.advance(mode)

    async with asyncio.TaskGroup() as group:
        for query_id, question in dataset.queries.items():
            group.create_task(one(query_id, question))
    metrics, per_query = score_run(dataset.qrels, run)
    return ModeResult(mode, metrics, None, time.perf_counter() - started, per_query)


async def evaluate(
    container: Container,
    dataset: BeirDataset,
    modes: Sequence[str] | None = None,
    *,
    progress: EvalProgress | None = None,
    ingest: bool = True,
    rerank_depth: int = 100,
    depth: int | None = None,
) -> EvalReport:
    """Ingest ``dataset`` into the (fresh) store of ``container`` and score each mode.

    ``depth`` (chunks per leg) defaults to enough for Recall@100; a shallower one shows how the
    fused top 10 changes when the legs are cut where a product query cuts them.
    """
    modes = parse_modes(modes)
    started = time.perf_counter()
    if ingest:
        await ingest_corpus(container, dataset, progress)
    ingest_seconds = time.perf_counter() - started
    chunks = await container.store.count_chunks()
    depth = depth or chunk_depth(len(dataset.corpus), chunks)
    results = [
        await run_mode(container, dataset, mode, depth, rerank_depth=rerank_depth, progress=progress) for mode in modes
    ]
    return EvalReport(
        dataset=dataset.name,
        split=dataset.split,
        documents=len(dataset.corpus),
        chunks=chunks,
        queries=len(dataset.queries),
        depth=depth,
        results=results,
        ingest_seconds=ingest_seconds,
        settings=tuning_snapshot(container.settings),
    )

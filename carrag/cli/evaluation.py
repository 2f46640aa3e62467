"""What `carrag eval` and `carrag bench` print: rich progress bars and result tables.

The work itself lives in `carrag/bench/`; this module only runs it and renders it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.table import Table

from carrag.bench.beir import load_beir
from carrag.bench.bench import BenchConfig, BenchReport, run_bench
from carrag.bench.runner import MEASURES, MODE_LABELS, EvalReport, eval_settings, evaluate, parse_modes
from carrag.cli.output import progress_bars
from carrag.services.container import build_container
from carrag.services.errors import CarragError
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.settings import get_settings

console = Console()

PHASE_LABELS = {"ingest": "ingest corpus", **{mode: f"queries: {label}" for mode, label in MODE_LABELS.items()}}


class RichEvalProgress:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def start(self, phase: str, total: int) -> None:
        self.tasks[phase] = self.progress.add_task(PHASE_LABELS.get(phase, phase), total=total)

    def advance(self, phase: str, amount: int = 1) -> None:
        self.progress.advance(self.tasks[phase], amount)


def _fail(message: str) -> typer.Exit:
    console.print(f"[red]Error:[/red] {escape(message)}")
    return typer.Exit(2)


def _quiet_logs() -> None:
    # Component warnings (e.g. "reranker unavailable") would tear through the progress bars; the
    # table reports them instead.
    logging.getLogger().setLevel(logging.ERROR)


def write_json(figures: dict[str, Any], path: Path | None) -> None:
    if path is not None:
        path.write_text(json.dumps(figures, indent=2) + "\n")
        console.print(f"Wrote {path}.")


def eval_table(report: EvalReport) -> Table:
    table = Table(
        title=f"{report.dataset} ({report.split}): {report.queries} queries, {report.documents} documents, "
        f"{report.chunks} chunks"
    )
    table.add_column("mode")
    for name in MEASURES:
        table.add_column(name, justify="right")
    for result in report.results:
        if result.metrics is None:
            table.add_row(result.label, *["n/a"] * len(MEASURES))
        else:
            table.add_row(result.label, *[f"{result.metrics[name]:.4f}" for name in MEASURES])
    return table


def run_eval_command(
    dataset_dir: Path,
    split: str,
    json_out: Path | None,
    modes: str | None,
    limit_queries: int | None,
    db: Path | None,
) -> None:
    _quiet_logs()
    try:
        dataset = load_beir(dataset_dir, split).limit_queries(limit_queries)
        mode_names = parse_modes(modes)
    except CarragError as exc:
        raise _fail(exc.message) from exc

    async def run(store_path: Path) -> EvalReport:
        settings = eval_settings(get_settings(), store_path)
        container = await build_container(settings, llm=ExtractiveLLM("eval"))
        try:
            existing = await container.store.count_chunks()
            if existing:
                console.print(f"{store_path} already holds {existing} chunks: re-running the queries only.")
            with progress_bars(console, transient=False) as progress:
                return await evaluate(
                    container, dataset, mode_names, progress=RichEvalProgress(progress), ingest=not existing
                )
        finally:
            await container.aclose()

    try:
        if db is not None:
            report = asyncio.run(run(db))
        else:
            with tempfile.TemporaryDirectory(prefix="carrag-eval-") as directory:
                report = asyncio.run(run(Path(directory) / "eval.db"))
    except CarragError as exc:
        raise _fail(exc.message) from exc
    console.print(eval_table(report))
    for result in report.results:
        if result.metrics is None:
            console.print(f"{result.label}: {escape(result.note or 'n/a')}")
    console.print(
        f"Each leg retrieved {report.depth} chunks per query; a document ranks at its best chunk. "
        f"Ingest {report.ingest_seconds:.0f} s; settings {report.settings}."
    )
    write_json(report.as_dict(), json_out)


# --- bench -----------------------------------------------------------------------------------------------
def _ms(value: float) -> str:
    return f"{value:.1f}"


def _figures_table(title: str, *columns: str) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right")
    return table


def bench_tables(report: BenchReport) -> list[Table]:
    machine = report.machine
    head = Table(
        title=f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gb']} GB; "
        f"{machine['date']}; load average at start {machine['load_average_at_start']}"
    )
    head.add_column("ingestion")
    head.add_column("figure", justify="right")
    head.add_column("peak RSS MB", justify="right")
    pdf, ingest = report.pdf, report.ingest
    head.add_row(
        f"PDF extraction ({Path(pdf['file']).name}, {pdf['pages']} pages, {pdf['pdf_mode']})",
        f"{pdf['pages_per_second']} pages/s",
        str(pdf["peak_rss_mb"]),
    )
    ocr = report.ocr
    if ocr.get("pages"):
        head.add_row(
            f"OCR (scanned copies of {ocr['pages']} pages, {ocr['dpi']} dpi; token F1 {ocr['token_f1']})",
            f"{ocr['pages_per_second']} pages/s",
            "",
        )
    elif ocr.get("skipped"):
        head.add_row(f"OCR: {ocr['skipped']}", "n/a", "")
    pipeline, raw = ingest["pipeline"], ingest["raw_embedder"]
    head.add_row(
        f"pipeline, {ingest['dataset']} ({pipeline['documents']} docs, {pipeline['chunks']} chunks)",
        f"{pipeline['chunks_per_second']} chunks/s",
        str(ingest["peak_rss_mb"]),
    )
    head.add_row("raw embedder, same chunks (interleaved)", f"{raw['chunks_per_second']} chunks/s", "")
    head.add_row("pipeline / raw embedder", f"{ingest['pipeline_over_raw']:.2f}", "")

    queries = _figures_table(
        "POST /search (top_k 5, hybrid, no generation), ms",
        "chunks",
        "search p50",
        "search p95",
        "rerank p50/p95",
        "query embed p50",
        "query embed p95",
        "BM25 / kNN leg p50",
        "open + first query",
        "disk MB",
        "peak RSS MB (serving; anon)",
    )
    for figures in report.queries:
        rerank = (
            f"{_ms(figures.search_rerank.p50)} / {_ms(figures.search_rerank.p95)}" if figures.search_rerank else "n/a"
        )
        queries.add_row(
            f"{figures.chunks:,}",
            _ms(figures.search.p50),
            _ms(figures.search.p95),
            rerank,
            _ms(figures.embed_query.p50),
            _ms(figures.embed_query.p95),
            f"{figures.stage_medians_ms.get('bm25_leg', 0):.1f} / {figures.stage_medians_ms.get('knn_leg', 0):.1f}",
            _ms(figures.open_ms + figures.first_query_ms),
            f"{figures.disk_mb:.0f}",
            f"{figures.peak_rss_mb:.0f} ({figures.peak_rss_serving_mb:.0f}; {figures.peak_anon_serving_mb:.0f})",
        )
    tables = [head, queries]
    if report.states:
        states = _figures_table(
            "The store while documents arrive and change (POST /search, E = query embedding), ms",
            "state",
            "chunks",
            "queries",
            "search p50",
            "E p50",
            "p50 - E",
            "BM25 / kNN leg p50",
            "kNN alone p50",
            "rows waiting",
            "peak RSS MB",
        )
        for state in report.states:
            states.add_row(
                state.state,
                f"{state.chunks:,}",
                str(len(state.search.samples_ms)),
                _ms(state.search.p50),
                _ms(state.embed.p50),
                _ms(state.search.p50 - state.embed.p50),
                f"{state.bm25_leg.p50:.1f} / {state.knn_leg.p50:.1f}",
                f"{state.knn_store.p50:.2f}",
                f"{state.waiting_rows:,}",
                f"{state.peak_rss_mb:.0f}",
            )
        tables.append(states)
    if report.peers:
        peers = _figures_table(
            "kNN leg against peers: same chunks, vectors, changes and query vectors (p50 ms; ratio to Carrag)",
            *("chunks", "state", "store", "p50", "p95", "queries", "ratio", "nDCG@10"),
        )
        for row in report.peers:
            mine = next(r for r in report.peers if (r.chunks, r.state, r.store) == (row.chunks, row.state, "carrag"))
            peers.add_row(
                f"{row.chunks:,}",
                row.state,
                row.store,
                f"{row.knn.p50:.2f}",
                f"{row.knn.p95:.2f}",
                str(len(row.knn.samples_ms)),
                f"{row.knn.p50 / mine.knn.p50:.2f}" if mine.knn.p50 else "n/a",
                f"{row.ndcg_at_10:.4f}" if row.ndcg_at_10 is not None else "",
            )
        tables.append(peers)
    return tables


def run_es_bench_command(documents: int, queries: int, quick: bool, json_out: Path | None) -> None:
    """`carrag bench --store elasticsearch` (carrag/bench/es_store.py)."""
    from carrag.bench.es_store import EsBenchConfig, run_es_bench

    _quiet_logs()
    config = EsBenchConfig(documents=documents, queries=min(queries, 100))
    if quick:
        config = EsBenchConfig(documents=40, writers=(1, 8), documents_per_writer_cap=5, queries=10)
    try:
        report = asyncio.run(run_es_bench(get_settings(), config, lambda line: console.print(escape(line))))
    except CarragError as exc:
        raise _fail(exc.message) from exc
    for line in report.lines():
        console.print(escape(line))
    write_json(report.as_dict(), json_out)


def run_bench_command(config: BenchConfig, json_out: Path | None) -> None:
    _quiet_logs()
    try:
        report = asyncio.run(run_bench(config, get_settings(), report=lambda line: console.print(escape(line))))
    except CarragError as exc:
        raise _fail(exc.message) from exc
    for table in bench_tables(report):
        console.print(table)
    notes: list[Any] = sorted({figures.rerank_note for figures in report.queries if figures.rerank_note})
    for note in notes:
        console.print(f"Reranking {escape(note)}")
    write_json(report.as_dict(), json_out)

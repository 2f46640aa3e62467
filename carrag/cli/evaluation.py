"""What `carrag eval` and `carrag bench` print: rich progress bars, the eval table, the bench's lines.

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
from carrag.bench.bench import BenchConfig, run_bench
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


# --- bench ---------------------------------------------------------------------------------------------
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
    notes: list[Any] = sorted({figures.rerank_note for figures in report.queries if figures.rerank_note})
    for note in notes:
        console.print(f"Reranking {escape(note)}")
    write_json(report.as_dict(), json_out)

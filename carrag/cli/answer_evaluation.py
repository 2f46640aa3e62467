"""What `carrag eval-answers` prints: progress bars, then one row of scores per answer mode.

The work lives in `carrag/bench/answer_runner.py` and `carrag/bench/answer_scoring.py`.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from carrag.bench.answer_questions import load_questions
from carrag.bench.answer_runner import AnswerEvalReport, answer_eval_settings, evaluate_answers, parse_answer_modes
from carrag.cli.evaluation import RichEvalProgress, _fail, _progress, _quiet_logs, console
from carrag.services.container import build_container
from carrag.services.errors import CarragError
from carrag.services.settings import Settings


def answers_table(report: AnswerEvalReport) -> Table:
    table = Table(
        title=f"{report.question_file}: {report.questions} questions over {report.documents} documents "
        f"({report.chunks} chunks); LLM {report.settings.get('llm')}"
    )
    for column in (
        "mode",
        "answerable accuracy",
        "citation validity",
        "cited answers",
        "refused unanswerable",
        "refused answerable",
        "invented numbers",
        "cut off",
        "median s",
        "p95 s",
        "served as",
    ):
        table.add_column(column, justify="left" if column in ("mode", "served as") else "right")
    for summary in report.summaries:
        table.add_row(
            summary.mode,
            f"{summary.accuracy:.2f} ({summary.correct}/{summary.answerable})",
            f"{summary.citation_validity:.2f} ({summary.valid_citations}/{summary.citations})",
            f"{summary.cited_answers}/{summary.answered}",
            f"{summary.refusal_rate:.2f} ({summary.refused_unanswerable}/{summary.unanswerable})",
            str(summary.refused_answerable),
            f"{summary.answers_with_invented_numbers}/{summary.answers}",
            str(summary.truncated),
            f"{summary.median_seconds:.2f}",
            f"{summary.p95_seconds:.2f}",
            ", ".join(f"{name} {count}" for name, count in sorted(summary.served_modes.items())),
        )
    return table


def write_json(report: AnswerEvalReport, path: Path) -> None:
    """Written after every answer too, so a run stopped early keeps its numbers (``complete: false``)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(report.as_dict(), indent=2, ensure_ascii=False) + "\n")
    partial.replace(path)


def run_eval_answers_command(
    questions_path: Path, modes_text: str, root: Path, top_k: int | None, json_out: Path | None
) -> None:
    _quiet_logs()
    try:
        questions = load_questions(questions_path)
        modes = parse_answer_modes(modes_text)
    except CarragError as exc:
        raise _fail(exc.message) from exc

    async def run(store_path: Path) -> AnswerEvalReport:
        container = await build_container(answer_eval_settings(Settings(), store_path))
        try:
            with _progress() as progress:
                return await evaluate_answers(
                    container,
                    questions,
                    root,
                    modes,
                    question_file=str(questions_path),
                    top_k=top_k,
                    progress=RichEvalProgress(progress),
                    checkpoint=(lambda report: write_json(report, json_out)) if json_out else None,
                )
        finally:
            await container.aclose()

    try:
        with tempfile.TemporaryDirectory(prefix="carrag-eval-answers-") as directory:
            report = asyncio.run(run(Path(directory) / "answers.db"))
    except CarragError as exc:
        raise _fail(exc.message) from exc
    console.print(answers_table(report))
    for summary in report.summaries:
        kinds = ", ".join(f"{kind} {correct}/{asked}" for kind, (correct, asked) in summary.by_kind.items())
        console.print(f"{summary.mode}: correct by kind: {escape(kinds)}")
    errors = sum(summary.errors for summary in report.summaries)
    if errors:
        console.print(f"[red]{errors} requests failed[/red] (counted as wrong answers; see --json).")
    console.print(
        "Accuracy: an accepted answer appears in the answer. Citation validity: [Source n] cites a listed source "
        f"containing the evidence. Ingest {report.ingest_seconds:.0f} s; settings {escape(str(report.settings))}."
    )
    if json_out is not None:
        write_json(report, json_out)
        console.print(f"Wrote {json_out}.")
    if not report.summaries:
        raise typer.Exit(1)

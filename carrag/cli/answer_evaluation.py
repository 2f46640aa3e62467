"""What `carrag eval-answers` prints: progress, then per question set a row of scores per answer mode."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from carrag.bench.answer_questions import PARTS, Question, load_questions
from carrag.bench.answer_runner import AnswerEvalReport, answer_eval_settings, evaluate_answers, parse_answer_modes
from carrag.cli.evaluation import RichEvalProgress, _fail, _quiet_logs, console
from carrag.cli.output import progress_bars
from carrag.services.container import build_container
from carrag.services.errors import CarragError, InvalidInput
from carrag.services.settings import Settings


def answers_table(report: AnswerEvalReport, name: str) -> Table:
    table = Table(
        title=f"{name} ({report.question_file}): {report.questions} questions over {report.documents} documents "
        f"({report.chunks} chunks); LLM {report.settings.get('llm')}"
    )
    for column in (
        "mode",
        "answerable accuracy",
        "citation validity",
        "cited answers",
        "refused unanswerable",
        "answerable refused",
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
            f"{summary.false_refusal_rate:.2f} ({summary.refused_answerable}/{summary.answerable})",
            f"{summary.answers_with_invented_numbers}/{summary.answers}",
            str(summary.truncated),
            f"{summary.median_seconds:.2f}",
            f"{summary.p95_seconds:.2f}",
            ", ".join(f"{name} {count}" for name, count in sorted(summary.served_modes.items())),
        )
    return table


def write_json(reports: dict[str, AnswerEvalReport], path: Path) -> None:
    """Written after every answer too, so a run stopped early keeps its numbers (``complete: false``)."""
    partial = path.with_name(path.name + ".partial")
    document: dict[str, Any] = {name: report.as_dict() for name, report in reports.items()}
    if len(document) == 1:
        document = next(iter(document.values()))
    partial.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    partial.replace(path)


def question_sets(part: str, questions_path: Path | None) -> dict[str, tuple[Path, list[Question]]]:
    if questions_path is not None:
        return {questions_path.stem: (questions_path, load_questions(questions_path))}
    if part not in (*PARTS, "all"):
        raise InvalidInput(f"Unknown part {part!r}; choose from {', '.join(PARTS)} or all.")
    names = list(PARTS) if part == "all" else [part]
    return {name: (PARTS[name], load_questions(PARTS[name])) for name in names}


def run_eval_answers_command(
    part: str, questions_path: Path | None, modes_text: str, root: Path, top_k: int | None, json_out: Path | None
) -> None:
    _quiet_logs()
    try:
        sets = question_sets(part, questions_path)
        modes = parse_answer_modes(modes_text)
    except CarragError as exc:
        raise _fail(exc.message) from exc
    reports: dict[str, AnswerEvalReport] = {}

    async def run(name: str, path: Path, questions: list[Question], store_path: Path) -> AnswerEvalReport:
        container = await build_container(answer_eval_settings(Settings(), store_path))

        def checkpoint(report: AnswerEvalReport) -> None:
            if json_out is not None:
                write_json(reports | {name: report}, json_out)

        try:
            with progress_bars(console, transient=False) as progress:
                return await evaluate_answers(
                    container,
                    questions,
                    root,
                    modes,
                    question_file=str(path),
                    top_k=top_k,
                    progress=RichEvalProgress(progress),
                    checkpoint=checkpoint,
                )
        finally:
            await container.aclose()

    try:
        for name, (path, questions) in sets.items():
            with tempfile.TemporaryDirectory(prefix="carrag-eval-answers-") as directory:
                reports[name] = asyncio.run(run(name, path, questions, Path(directory) / "answers.db"))
    except CarragError as exc:
        raise _fail(exc.message) from exc
    for name, report in reports.items():
        console.print(answers_table(report, name))
        for summary in report.summaries:
            kinds = ", ".join(
                f"{kind} {correct}/{asked} ({correct / asked:.2f})"
                for kind, (correct, asked) in summary.by_kind.items()
            )
            console.print(f"{name} {summary.mode}: correct by kind: {escape(kinds)}")
    errors = sum(summary.errors for report in reports.values() for summary in report.summaries)
    if errors:
        console.print(f"[red]{errors} requests failed[/red] (counted as wrong answers; see --json).")
    settings = next(iter(reports.values())).settings if reports else {}
    console.print(
        "Accuracy: an accepted answer appears in the answer. Citation validity: [Source n] cites a listed source "
        "containing the evidence. Answerable refused: the false-refusal rate. "
        f"Ingest {sum(r.ingest_seconds for r in reports.values()):.0f} s; settings {escape(str(settings))}."
    )
    if json_out is not None:
        write_json(reports, json_out)
        console.print(f"Wrote {json_out}.")
    if not any(report.summaries for report in reports.values()):
        raise typer.Exit(1)

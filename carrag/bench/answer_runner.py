"""`carrag eval-answers`: ingest the documents a question file names into a fresh store, ask every
question through the real ``POST /query`` route (the app in process, over ASGI, so the score sees
exactly the JSON a client gets), once per answer mode, and score the answers (`answer_scoring`).

- All questions share one store holding every listed document, so each question is answered with
  the other documents as distractors, as a user's store would be.
- Follow-up questions send their ``history``; each request names its ``answer_mode``. A server
  without answer modes ignores the field, and the report shows which mode actually served
  (``answer_mode`` in the response, ``-`` when absent).
- Questions are asked one at a time, so the latencies are those of an otherwise idle service.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from carrag.bench.answer_questions import Question, documents_of
from carrag.bench.answer_scoring import AnswerScore, ModeSummary, score_answer
from carrag.bench.runner import EvalProgress, _NoProgress, fresh_store_settings
from carrag.services.container import Container
from carrag.services.errors import InvalidInput
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings

ANSWER_MODES = ("generate", "extract", "auto")
ANSWER_EXCERPT_CHARS = 600  # of each answer, kept in the JSON report for reading failures


def parse_answer_modes(text: str | None) -> list[str]:
    if text is None or text.strip() == "all":
        return list(ANSWER_MODES)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in ANSWER_MODES]
    if unknown or not names:
        raise InvalidInput(
            f"Unknown answer mode(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(ANSWER_MODES)} or all."
        )
    return list(dict.fromkeys(names))


def answer_eval_settings(base: Settings, store_path: Path) -> Settings:
    """A fresh SQLite file, no auto-tagging, no API key; everything else (LLM, answer mode defaults,
    thresholds, reranking) as configured, since that is what is being measured."""
    return fresh_store_settings(base, store_path, api_keys=[])


def settings_snapshot(settings: Settings) -> dict[str, Any]:
    names = (
        "llm",
        "local_llm_model",
        "ollama_llm_model",
        "answer_mode",
        "llm_max_tokens",
        "llm_temperature",
        "max_context_chars",
        "embedder",
        "rerank_enabled",
        "default_top_k",
        "chunk_size",
        "chunking_strategy",
    )
    return {name: str(getattr(settings, name)) for name in names if hasattr(settings, name)}


@dataclass(slots=True)
class AnsweredQuestion:
    score: AnswerScore
    answer: str
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.score.as_dict() | {"answer": self.answer[:ANSWER_EXCERPT_CHARS], "error": self.error}


@dataclass(slots=True)
class AnswerEvalReport:
    question_file: str
    questions: int
    documents: int
    chunks: int
    ingest_seconds: float
    settings: dict[str, Any]
    summaries: list[ModeSummary] = field(default_factory=list)
    answers: dict[str, list[AnsweredQuestion]] = field(default_factory=dict)

    def set_summary(self, mode: str, answered: Sequence[AnsweredQuestion], *, complete: bool) -> None:
        errors = sum(item.error is not None for item in answered)
        summary = ModeSummary.of(mode, [item.score for item in answered], errors)
        summary.complete = complete
        self.summaries = [existing for existing in self.summaries if existing.mode != mode] + [summary]

    def as_dict(self) -> dict[str, Any]:
        return {
            "question_file": self.question_file,
            "questions": self.questions,
            "documents": self.documents,
            "chunks": self.chunks,
            "ingest_seconds": round(self.ingest_seconds, 2),
            "settings": self.settings,
            "modes": [summary.as_dict() for summary in self.summaries],
            "answers": {mode: [item.as_dict() for item in items] for mode, items in self.answers.items()},
        }


async def ingest_documents(
    container: Container, root: Path, documents: Sequence[str], progress: EvalProgress | None = None
) -> int:
    """Ingest each document (its path below ``root`` is its source id); returns the chunks written."""
    progress = progress or _NoProgress()
    missing = [document for document in documents if not (root / document).is_file()]
    if missing:
        raise InvalidInput(f"{len(missing)} listed documents are not under {root}, e.g. {missing[0]}")
    progress.start("ingest documents", len(documents))
    chunks = 0
    for document in documents:
        data = await asyncio.to_thread((root / document).read_bytes)
        result = await container.ingestion.ingest_file(data, Path(document).name, IngestCommand(source_id=document))
        chunks += result.chunk_count
        progress.advance("ingest documents")
    return chunks


def query_body(question: Question, mode: str | None, top_k: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question.question, "history": list(question.history)}
    if mode:
        body["answer_mode"] = mode
    if top_k:
        body["top_k"] = top_k
    return body


async def ask(
    client: httpx.AsyncClient, question: Question, mode: str | None, top_k: int | None
) -> tuple[dict[str, Any], float, str | None]:
    """The /query JSON, the seconds it took, and an error (the response becomes an empty answer)."""
    started = time.perf_counter()
    response = await client.post("/query", json=query_body(question, mode, top_k))
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        return {"answer": "", "sources": []}, seconds, f"HTTP {response.status_code}: {response.text[:300]}"
    return response.json(), seconds, None


Checkpoint = Callable[["AnswerEvalReport"], None]


async def answer_all(
    client: httpx.AsyncClient,
    questions: Sequence[Question],
    mode: str,
    report: AnswerEvalReport,
    *,
    top_k: int | None = None,
    progress: EvalProgress | None = None,
    checkpoint: Checkpoint | None = None,
) -> None:
    """Answer every question in ``mode`` into ``report``; after each answer the report holds the mode's
    answers so far (its summary marked partial) and ``checkpoint`` gets it, so a long run stopped
    early still has its numbers."""
    progress = progress or _NoProgress()
    phase = f"answers: {mode}"
    progress.start(phase, len(questions))
    answered: list[AnsweredQuestion] = []
    report.answers[mode] = answered
    for question in questions:
        response, seconds, error = await ask(client, question, mode, top_k)
        answered.append(AnsweredQuestion(score_answer(question, response, seconds), response.get("answer", ""), error))
        report.set_summary(mode, answered, complete=len(answered) == len(questions))
        progress.advance(phase)
        if checkpoint is not None:
            checkpoint(report)


async def evaluate_answers(
    container: Container,
    questions: Sequence[Question],
    root: Path,
    modes: Sequence[str],
    *,
    question_file: str = "",
    top_k: int | None = None,
    progress: EvalProgress | None = None,
    checkpoint: Checkpoint | None = None,
) -> AnswerEvalReport:
    from carrag.api.main import create_app  # the API layer only for this in-process client

    documents = documents_of(list(questions))
    started = time.perf_counter()
    chunks = await ingest_documents(container, root, documents, progress)
    report = AnswerEvalReport(
        question_file=question_file,
        questions=len(questions),
        documents=len(documents),
        chunks=chunks,
        ingest_seconds=time.perf_counter() - started,
        settings=settings_snapshot(container.settings),
    )
    app = create_app(container=container)
    timeout = httpx.Timeout(container.settings.llm_timeout + 60.0)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://carrag.eval", timeout=timeout
    ) as client:
        for mode in modes:
            await answer_all(client, questions, mode, report, top_k=top_k, progress=progress, checkpoint=checkpoint)
    return report

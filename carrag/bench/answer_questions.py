"""The question files of `carrag eval-answers`: JSON Lines, one question per line.

Each line: ``id``, ``documents`` (paths relative to the document root, default ``../shared/data``),
``question``, optional ``history`` ([{role, content}], earlier turns of the conversation), ``answerable``,
``accepted`` (acceptable answer strings; an entry that is a list needs all its parts, for list answers),
``evidence`` (strings a correct citation's source must contain), ``kind`` (factoid, number, list, table,
yesno, definition, command, followup, topic_change, unanswerable ...). Answerable questions need at least
one accepted answer and one evidence string; unanswerable ones have neither.

Two files, split by document (never by question): ``answers_dev.jsonl`` (the development part: the
answer model is fitted and tuned on it) and ``answers_validation.jsonl`` (other documents, measured
only). Both are always reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carrag.services.errors import InvalidInput

QUESTION_DIR = Path(__file__).resolve().parent / "questions"
PARTS = {"dev": QUESTION_DIR / "answers_dev.jsonl", "validation": QUESTION_DIR / "answers_validation.jsonl"}
DEFAULT_QUESTIONS = PARTS["dev"]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    documents: tuple[str, ...]
    question: str
    answerable: bool
    kind: str
    accepted: tuple[str | tuple[str, ...], ...] = ()
    evidence: tuple[str, ...] = ()
    history: tuple[dict[str, str], ...] = field(default_factory=tuple)

    @staticmethod
    def from_json(record: dict[str, Any], where: str) -> Question:
        if not isinstance(record.get("question"), str) or not isinstance(record.get("documents"), list):
            raise InvalidInput(f"{where}: missing or malformed field: question (text) and documents (list) are needed")
        try:
            question = Question(
                id=str(record["id"]),
                documents=tuple(record["documents"]),
                question=record["question"],
                answerable=bool(record["answerable"]),
                kind=record.get("kind", "factoid"),
                accepted=tuple(
                    entry if isinstance(entry, str) else tuple(entry) for entry in record.get("accepted", [])
                ),
                evidence=tuple(record.get("evidence", [])),
                history=tuple({"role": turn["role"], "content": turn["content"]} for turn in record.get("history", [])),
            )
        except (KeyError, TypeError) as error:
            raise InvalidInput(f"{where}: missing or malformed field {error}") from error
        if not question.documents or not question.question.strip():
            raise InvalidInput(f"{where}: a question needs its text and at least one document")
        if question.answerable and not (question.accepted and question.evidence):
            raise InvalidInput(f"{where}: an answerable question needs accepted answers and evidence")
        if not question.answerable and (question.accepted or question.evidence):
            raise InvalidInput(f"{where}: an unanswerable question has no accepted answers or evidence")
        return question


def load_questions(path: Path) -> list[Question]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InvalidInput(f"Cannot read {path}: {error.strerror or error}") from error
    questions: list[Question] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidInput(f"{path}:{number}: not JSON ({error.msg})") from error
        questions.append(Question.from_json(record, f"{path}:{number}"))
    ids = [question.id for question in questions]
    duplicates = sorted({qid for qid in ids if ids.count(qid) > 1})
    if duplicates:
        raise InvalidInput(f"{path}: duplicate question ids {', '.join(duplicates)}")
    if not questions:
        raise InvalidInput(f"{path} holds no questions")
    return questions


def documents_of(questions: list[Question]) -> list[str]:
    """Every document the questions name, once, in first-mention order."""
    return list(dict.fromkeys(document for question in questions for document in question.documents))

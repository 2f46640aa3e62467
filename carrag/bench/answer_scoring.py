"""Scoring one answer of `carrag eval-answers` against its question, from the /query response alone.

Every check works on *normalised* text (`normalise`): Unicode compatibility forms and accents folded,
lower case, markdown emphasis removed, dashes unified, thousands separators dropped between digits
(``12,553`` and ``7,92,756`` read as ``12553`` and ``792756``, while ``3128,678`` stays two cells) and whitespace collapsed, so a PDF's
line breaks or a table's bold cells do not decide the score.

- **Correct**: the answer contains an accepted answer (an accepted entry that is a list needs all of
  its parts), as whole words; a response flagged ``answerable: false`` is never correct.
- **Citations**: each ``[Source n]`` (also ``[Sources 1 and 2]``, ``[Source 1, 3]``) is valid when
  source *n* was listed and its text contains one of the question's evidence strings.
- **Refusal**: ``answerable: false`` when the response has that field, else refusal wording.
- **Invented numbers**: numbers in the answer (citation markers and list numbering aside) that occur
  in no listed source's text; a response flagged ``answerable: false`` is the server's own refusal
  text and is not checked.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CITATION = re.compile(r"\[Sources?\s+(\d+(?:\s*(?:,|and|&)\s*(?:Source\s+)?\d+)*)[^\]]*\]", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")
LIST_NUMBERING = re.compile(r"^\s*\d+[.)]\s", re.MULTILINE)
# 12,553 / 23,718,968 / 7,92,756 (Indian grouping); not the cells of a CSV row such as 3128,678,672.
THOUSANDS = re.compile(r"(?<![\d,.])\d{1,3}(?:,\d{2})*(?:,\d{3})+(?!\d|,\d)")
DASHES = re.compile(r"\s*[\u2010-\u2015\u2212-]\s*")
EMPHASIS = re.compile(r"[*_`]+")
SPACES = re.compile(r"\s+")

REFUSAL = re.compile(
    r"(documents?|sources?|passages?|context)\s+(provided\s+)?(do|does)\s*(not|n't)\s+"
    r"(say|contain|mention|include|provide|answer|specify|state|have)"
    r"|\b(not|never)\s+(mentioned|stated|specified|provided|found)\s+in\s+the\s+(documents?|sources?|context)"
    r"|\bno\s+(relevant\s+)?(information|passages?|answer)\b"
    r"|\b(cannot|can't|can ?not|unable\s+to)\s+(answer|find|determine)"
    r"|\bi\s+(do\s+not|don't)\s+know\b",
    re.IGNORECASE,
)


def normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(char for char in folded if not unicodedata.combining(char)).casefold()
    folded = EMPHASIS.sub("", folded)
    folded = THOUSANDS.sub(lambda match: match.group().replace(",", ""), folded)
    folded = DASHES.sub("-", folded)
    return SPACES.sub(" ", folded).strip()


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether normalised ``phrase`` occurs in normalised ``text`` as whole words (``no`` is not in ``not``)."""
    needle = normalise(phrase)
    if not needle:
        return False
    left = r"(?<!\w)" if needle[0].isalnum() else ""
    right = r"(?!\w)" if needle[-1].isalnum() else ""
    return re.search(left + re.escape(needle) + right, normalise(text)) is not None


def is_correct(answer: str, accepted: Sequence[str | Sequence[str]]) -> bool:
    for entry in accepted:
        parts = [entry] if isinstance(entry, str) else list(entry)
        if parts and all(contains_phrase(answer, part) for part in parts):
            return True
    return False


def cited_numbers(answer: str) -> list[int]:
    """The source numbers of every citation marker, in order (repeats kept)."""
    return [int(number) for match in CITATION.finditer(answer) for number in re.findall(r"\d+", match.group(1))]


def without_citations(answer: str) -> str:
    return CITATION.sub(" ", answer)


def numbers_in(text: str) -> set[str]:
    cleaned = normalise(LIST_NUMBERING.sub(" ", without_citations(text)))
    return {_canonical_number(match) for match in NUMBER.findall(cleaned)}


def _canonical_number(raw: str) -> str:
    if "." in raw:
        raw = raw.rstrip("0").rstrip(".")
    return raw.lstrip("0") or "0"


def invented_numbers(answer: str, sources: Sequence[dict[str, Any]]) -> set[str]:
    known: set[str] = set()
    for source in sources:
        known |= numbers_in(source.get("text") or "")
    return numbers_in(answer) - known


def is_refusal(response: dict[str, Any]) -> bool:
    flagged = response.get("answerable")
    if isinstance(flagged, bool):
        return not flagged
    return REFUSAL.search(response.get("answer") or "") is not None


@dataclass(slots=True)
class CitationCheck:
    number: int
    listed: bool  # source n exists in the response
    has_evidence: bool  # its text contains an evidence string

    @property
    def valid(self) -> bool:
        return self.listed and self.has_evidence


def check_citations(answer: str, sources: Sequence[dict[str, Any]], evidence: Sequence[str]) -> list[CitationCheck]:
    checks = []
    for number in cited_numbers(answer):
        listed = 1 <= number <= len(sources)
        text = sources[number - 1].get("text") or "" if listed else ""
        checks.append(CitationCheck(number, listed, listed and any(contains_phrase(text, e) for e in evidence)))
    return checks


@dataclass(slots=True)
class AnswerScore:
    """One question answered in one mode."""

    question_id: str
    kind: str
    answerable: bool
    refused: bool
    correct: bool
    citations: list[CitationCheck] = field(default_factory=list)
    invented: set[str] = field(default_factory=set)
    seconds: float = 0.0
    answer_mode: str | None = None  # what the server says it did (absent before answer modes existed)
    finish_reason: str | None = None
    unsupported_sentences: int = 0  # sentences of the served answer its grounding check found unsupported

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.question_id,
            "kind": self.kind,
            "answerable": self.answerable,
            "refused": self.refused,
            "correct": self.correct,
            "citations": len(self.citations),
            "valid_citations": sum(check.valid for check in self.citations),
            "invented_numbers": sorted(self.invented),
            "seconds": round(self.seconds, 3),
            "answer_mode": self.answer_mode,
            "finish_reason": self.finish_reason,
            "unsupported_sentences": self.unsupported_sentences,
        }


def score_answer(question: Any, response: dict[str, Any], seconds: float) -> AnswerScore:
    """``question`` is a `carrag.bench.answer_questions.Question`; ``response`` the /query JSON."""
    answer = response.get("answer") or ""
    sources = response.get("sources") or []
    refused = is_refusal(response)
    return AnswerScore(
        question_id=question.id,
        kind=question.kind,
        answerable=question.answerable,
        refused=refused,
        correct=question.answerable and not refused and is_correct(answer, question.accepted),
        citations=check_citations(answer, sources, question.evidence) if question.answerable else [],
        # A refusal the server flags is its own fixed text ("The 3 closest passages are listed"), not a claim.
        invented=set() if response.get("answerable") is False else invented_numbers(answer, sources),
        seconds=seconds,
        answer_mode=response.get("answer_mode"),
        finish_reason=response.get("finish_reason"),
        unsupported_sentences=len((response.get("grounding") or {}).get("unsupported") or []),
    )


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[int(rank) - 1]


def median(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


@dataclass(slots=True)
class ModeSummary:
    mode: str
    answerable: int
    correct: int
    citations: int
    valid_citations: int
    cited_answers: int  # answerable questions answered (not refused) with at least one citation
    answered: int  # answerable questions not refused
    unanswerable: int
    refused_unanswerable: int
    refused_answerable: int
    answers_with_invented_numbers: int
    answers: int
    answers_with_unsupported_sentences: int
    median_seconds: float
    p95_seconds: float
    served_modes: dict[str, int]
    truncated: int
    errors: int = 0  # requests that failed (counted as wrong answers)
    by_kind: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind -> (correct, asked), answerable only
    complete: bool = True  # false while (or when) the run stopped before every question was asked

    @staticmethod
    def of(mode: str, scores: Sequence[AnswerScore], errors: int = 0) -> ModeSummary:
        answerable = [s for s in scores if s.answerable]
        unanswerable = [s for s in scores if not s.answerable]
        answered = [s for s in answerable if not s.refused]
        citations = [check for s in answerable for check in s.citations]
        served: dict[str, int] = {}
        for score in scores:
            served[score.answer_mode or "-"] = served.get(score.answer_mode or "-", 0) + 1
        seconds = [s.seconds for s in scores]
        by_kind: dict[str, tuple[int, int]] = {}
        for score in answerable:
            correct, asked = by_kind.get(score.kind, (0, 0))
            by_kind[score.kind] = (correct + score.correct, asked + 1)
        return ModeSummary(
            mode=mode,
            answerable=len(answerable),
            correct=sum(s.correct for s in answerable),
            citations=len(citations),
            valid_citations=sum(check.valid for check in citations),
            cited_answers=sum(bool(s.citations) for s in answered),
            answered=len(answered),
            unanswerable=len(unanswerable),
            refused_unanswerable=sum(s.refused for s in unanswerable),
            refused_answerable=len(answerable) - len(answered),
            answers_with_invented_numbers=sum(bool(s.invented) for s in scores),
            answers=len(scores),
            answers_with_unsupported_sentences=sum(s.unsupported_sentences > 0 for s in scores),
            median_seconds=median(seconds),
            p95_seconds=percentile(seconds, 0.95),
            served_modes=served,
            truncated=sum(s.finish_reason == "length" for s in scores),
            errors=errors,
            by_kind=dict(sorted(by_kind.items())),
        )

    @property
    def accuracy(self) -> float:
        return self.correct / self.answerable if self.answerable else 0.0

    @property
    def citation_validity(self) -> float:
        return self.valid_citations / self.citations if self.citations else 0.0

    @property
    def refusal_rate(self) -> float:
        return self.refused_unanswerable / self.unanswerable if self.unanswerable else 0.0

    @property
    def false_refusal_rate(self) -> float:
        """The share of answerable questions refused ("the documents don't say")."""
        return self.refused_answerable / self.answerable if self.answerable else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "complete": self.complete,
            "answerable_accuracy": round(self.accuracy, 4),
            "correct": self.correct,
            "answerable": self.answerable,
            "citation_validity": round(self.citation_validity, 4),
            "citations": self.citations,
            "valid_citations": self.valid_citations,
            "answered_with_citation": self.cited_answers,
            "answered": self.answered,
            "refusal_rate_unanswerable": round(self.refusal_rate, 4),
            "refused_unanswerable": self.refused_unanswerable,
            "unanswerable": self.unanswerable,
            "refused_answerable": self.refused_answerable,
            "false_refusal_rate": round(self.false_refusal_rate, 4),
            "answers_with_invented_numbers": self.answers_with_invented_numbers,
            "answers": self.answers,
            "answers_with_unsupported_sentences": self.answers_with_unsupported_sentences,
            "truncated_answers": self.truncated,
            "median_seconds": round(self.median_seconds, 3),
            "p95_seconds": round(self.p95_seconds, 3),
            "served_answer_modes": self.served_modes,
            "errors": self.errors,
            "correct_by_kind": {kind: {"correct": c, "asked": n} for kind, (c, n) in self.by_kind.items()},
        }

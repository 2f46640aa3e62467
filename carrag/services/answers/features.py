"""What the answer model reads: every answer unit of the retrieved passages, described by features.

Per unit (``unit_features``): the embedder's cosine to the question (and to the retrieval query of a
follow-up), lexical evidence (the rarity-weighted share of the question's terms it holds, its key
terms: numbers, codes and names the question gives), what it holds (a new number, a date, a name,
code) crossed with what the question asks for (``questions``), its kind (sentence, list item,
definition, command), the overlap of its heading and label with the question, its place (in
the winning chunk, its position), its passage's retrieval rank and fusion score, and its standing
among the request's units by cosine and by coverage (``*_top``). Per request (``request_features``):
whether the question names something no passage mentions,
and what it asks for (a value the same for every unit of a request tells the unit ranker nothing: it
reads what is asked only crossed with what a unit holds).

The same code builds the features at query time and when the model is fitted
(`carrag/bench/answer_fitting.py`), so the two cannot drift apart.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from carrag.services.answers.evidence import idf, missing_key_terms, numbers, terms, weighted_coverage
from carrag.services.answers.questions import Asked, asked
from carrag.services.answers.units import Unit, looks_like_code, read_units
from carrag.services.answers.values import has_date
from carrag.services.embedders.service import EmbeddingService

MAX_UNITS = 160  # bounds the embedding work of one request
KINDS = ("sentence", "item", "definition", "command")  # row, list, code, record: measured to add nothing
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved source as the answer step reads it."""

    text: str
    title: str = ""  # the document's title and source id
    section: str = ""  # the winning chunk's heading path
    matched: tuple[int, int] | None = None  # the winning chunk's span in ``text``
    rank: int = 0  # 0-based retrieval rank
    fusion: float = 1.0  # its fusion score over the best passage's


@dataclass(slots=True, eq=False)
class Candidate:
    source: int  # 0-based position among the passages
    unit: Unit
    features: dict[str, float]
    vector: np.ndarray | None = None
    probability: float = 0.0
    score: float = 0.0


@dataclass(slots=True)
class Reading:
    """Every candidate unit of one request with its features, and the request's own features."""

    question: str
    passages: list[Passage]
    candidates: list[Candidate]
    request: dict[str, float] = field(default_factory=dict)

    def of_source(self, source: int) -> list[Candidate]:
        return [candidate for candidate in self.candidates if candidate.source == source]


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _quotes(text: str, asked_words: str) -> bool:
    """A unit holding the question itself (an example that quotes it, a FAQ heading) shows it asked, not answered."""
    return len(asked_words.split()) >= 4 and asked_words in _words(text)


def _unit_vectors(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def _bounded(units: list[tuple[int, Unit]], question_terms: set[str], limit: int) -> list[tuple[int, Unit]]:
    """At most ``limit`` units: those sharing most terms with the question, in passage order."""
    if len(units) <= limit:
        return units
    overlap = [len(question_terms & set(terms(unit.readable))) for _, unit in units]
    keep = sorted(range(len(units)), key=lambda i: (-overlap[i], i))[:limit]
    return [units[i] for i in sorted(keep)]


async def read_passages(
    question: str, passages: Sequence[Passage], embedder: EmbeddingService, *, query: str | None = None
) -> Reading:
    """``question`` as asked; ``query`` what was searched (a follow-up with the turn before it)."""
    query = query or question
    asked_words = _words(question)
    units = [
        (source, unit)
        for source, passage in enumerate(passages)
        for unit in read_units(passage.text, passage.section)
        if not _quotes(unit.text, asked_words)
    ]
    units = _bounded(units, set(terms(query)), MAX_UNITS)
    if not units:
        return Reading(question, list(passages), [], request_features(question, passages, []))
    readable = [unit.readable for _, unit in units]
    unit_terms = [terms(text) for text in readable]
    weights = idf(unit_terms)
    vectors = _unit_vectors(await embedder.embed_documents(readable))
    cosines = vectors @ _unit_vectors(await embedder.embed_query(question)).reshape(-1)
    query_cosines = (
        cosines if query == question else vectors @ _unit_vectors(await embedder.embed_query(query)).reshape(-1)
    )
    kind = asked(question)
    question_numbers = numbers(question)
    per_source = Counter(source for source, _ in units)
    best_cosine = cosines.max()
    position_in_source: Counter[int] = Counter()
    candidates = []
    for index, (source, unit) in enumerate(units):
        passage = passages[source]
        position = position_in_source[source]
        position_in_source[source] += 1
        features = unit_features(
            question,
            kind,
            unit,
            passage,
            found=set(unit_terms[index]),
            weights=weights,
            question_numbers=question_numbers,
        )
        features.update(
            cosine=float(cosines[index]),
            query_cosine=float(query_cosines[index]),
            cosine_gap=float(cosines[index] - best_cosine),
            position=position / max(per_source[source] - 1, 1),
        )
        candidates.append(Candidate(source, unit, features, vectors[index]))
    # a unit's standing among this request's units: the ranker's scores are compared within a request
    for name in ("cosine", "coverage", "context_coverage"):
        values = np.array([candidate.features[name] for candidate in candidates])
        for candidate, higher in zip(candidates, (values[None, :] > values[:, None]).sum(axis=1), strict=True):
            candidate.features[f"{name}_top"] = 1.0 / (1.0 + float(higher))
    return Reading(question, list(passages), candidates, request_features(question, passages, candidates))


def unit_features(
    question: str,
    kind: Asked,
    unit: Unit,
    passage: Passage,
    *,
    found: set[str],
    weights: dict[str, float],
    question_numbers: set[str],
) -> dict[str, float]:
    """The features that need no embedding (``read_passages`` adds the cosines)."""
    text = unit.display
    question_terms = terms(question)
    context_terms = set(terms(f"{unit.heading} {unit.label} {passage.title}"))
    new_numbers = bool(numbers(text) - question_numbers)
    date = has_date(unit.text)
    code = looks_like_code(unit.text) or unit.kind in ("command", "code") or _OPTION.search(unit.text) is not None
    name = bool({word.lower() for word in _NAME.findall(text)} - {word.lower() for word in question.split()})
    keys_missing = missing_key_terms(question, [text, unit.heading, unit.label, passage.title])
    matched = passage.matched
    in_match = matched is not None and unit.start < matched[1] and unit.end > matched[0]
    features = {
        "coverage": weighted_coverage(question_terms, found, weights),
        "context_coverage": weighted_coverage(question_terms, found | context_terms, weights),
        "rare_coverage": _rare_coverage(question_terms, found, weights),
        "key_terms_missing": float(bool(keys_missing)),
        # a unit that repeats the question and adds nothing (a heading, a title line) names the topic, not the answer
        "echo": weighted_coverage(question_terms, found, weights) * float(len(found - set(question_terms)) <= 1),
        "length": math.log1p(len(text.split())),
        "lead_in": float(unit.text.endswith(":")),
        "contents_entry": float(unit.is_contents_entry),
        "has_number": float(new_numbers),
        "in_match": float(in_match),
        "rank": 1.0 / (1.0 + passage.rank),
        "fusion": passage.fusion,
        "quantity_number": float(kind.quantity and new_numbers),
        "quantity_no_number": float(kind.quantity and not new_numbers),
        "date_date": float(kind.date and date),
        "date_no_date": float(kind.date and not date),
        "person_name": float(kind.person and name),
        "command_code": float(kind.command and code),
        "command_no_code": float(kind.command and not code),
        "definition_definition": float(kind.definition and unit.kind == "definition"),
        "yes_no_sentence": float(kind.yes_no and unit.kind == "sentence"),
    }
    features.update({f"kind_{name}": float(unit.kind == name) for name in KINDS})
    return features


def _rare_coverage(question_terms: Sequence[str], found: set[str], weights: dict[str, float]) -> float:
    """The share of the question's rarer half of terms (by weight) the unit holds."""
    # Equal weights keep the question's order: a set's order changes with each process's hash seed.
    unique = sorted(
        dict.fromkeys(question_terms), key=lambda term: -weights.get(term, max(weights.values(), default=1.0))
    )
    rare = unique[: max(1, (len(unique) + 1) // 2)] if unique else []
    return sum(term in found for term in rare) / len(rare) if rare else 0.0


def request_features(question: str, passages: Sequence[Passage], candidates: Sequence[Candidate]) -> dict[str, float]:
    """What the refusal reads besides the best units' probabilities (the model adds those): whether the
    question names something no passage mentions, the share of its terms no passage holds, the best cosine."""
    texts = [text for passage in passages for text in (passage.text, passage.title)]
    missing = missing_key_terms(question, texts)
    asked_terms = set(terms(question))
    present = set(terms("\n".join(texts)))
    cosines = sorted((candidate.features["cosine"] for candidate in candidates), reverse=True)
    coverage = max((candidate.features["coverage"] for candidate in candidates), default=0.0)
    return {
        "key_terms_missing": float(bool(missing)),
        "absent_terms": len(asked_terms - present) / len(asked_terms) if asked_terms else 0.0,
        "best_cosine": cosines[0] if cosines else 0.0,
        "best_coverage": coverage,
        **asked(question).flags(),
    }

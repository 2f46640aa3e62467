"""Score every sentence of the retrieved passages against the question.

A sentence's score mixes the embedder's cosine similarity to the question (one batched call for
all sentences; the embedding cache makes repeats free) with lexical evidence: the share of the
question's content terms it contains, each weighted by its rarity among the candidate sentences,
so numbers and rare terms of the question count most. The scores serve the refusal decision, the
choice of what the model sees, the extractive answer and the highlights.

A sentence can echo the question without answering it (a heading, a table's header row, a title
line: "Tensile Strength of SNB22-3"). ``strength`` ranks sentences for the answer: it discounts
sentences that add fewer than ``INFORMATIVE_TERMS`` terms beyond the question's, headings and
table-of-contents entries (a section title with dot leaders and a page number: it names where the
answer is, it is not the answer), and, when the question asks for a quantity ("how many", "what
year", ...), sentences without a number.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from carrag.services.answers.asked import asked_nouns, asked_similarities
from carrag.services.answers.evidence import idf, numbers, terms, weighted_coverage
from carrag.services.answers.question_types import expects_number
from carrag.services.answers.sentences import Sentence, code_spans, split_sentences
from carrag.services.answers.tables import RowReading, read_rows
from carrag.services.embedders.service import EmbeddingService

COSINE_WEIGHT = 0.55
LEXICAL_WEIGHT = 0.45
MAX_SENTENCES = 160  # bound the embedding work of one request (top_k × window × sentences)
INFORMATIVE_TERMS = 3  # terms beyond the question's that make a sentence a possible answer
NO_NUMBER_FACTOR = 0.6
HEADING_FACTOR = 0.5
ASKED_CHECKS = 20  # the strongest sentences whose words are compared with the asked noun
_PERSONAL_PRONOUN = re.compile(r"\b(he|she|they|him|her|them)\b", re.I)
_HEADING = re.compile(r"^\s*(#{1,6}\s|\*\*[^*]+\*\*\s*$)")
_DOT_LEADERS = re.compile(r"(?:\.\s?){5,}")  # ". . . . ." or "....." between a contents entry and its page


def is_contents_entry(text: str) -> bool:
    """A table-of-contents line: "2.1.7 Verifying function usage IDs . . . . . 10"."""
    return _DOT_LEADERS.search(text) is not None


@dataclass(slots=True, eq=False)  # compared by identity: it holds a vector
class ScoredSentence:
    source: int  # 0-based position in the request's sources
    sentence: Sentence
    terms: list[str]
    cosine: float
    lexical: float
    vector: np.ndarray | None = None
    new_terms: int = 0  # content terms the question does not have
    has_number: bool = False
    is_heading: bool = False
    is_header_row: bool = False  # the first row of a table block
    is_contents: bool = False  # a table-of-contents entry (``is_contents_entry``)
    in_code: bool = False  # inside a fenced code block: an answer only as what a sentence announces
    reading: RowReading | None = None  # for a table row: its title, column names and aligned cells
    asked_similarity: float = 0.0  # how close its closest word is to the noun the question asks about (``asked``)
    antecedent: Sentence | None = None  # the sentence before, when this one refers back to a person ("she greeted")
    # the cosine to the question as asked; differs from ``cosine`` for a follow-up, whose ``cosine`` may be the
    # one to the previous turn joined with it (a sentence answering the previous question is close to that)
    question_cosine: float | None = None

    @property
    def asked_cosine(self) -> float:
        return self.cosine if self.question_cosine is None else self.question_cosine

    @property
    def display(self) -> str:
        """The sentence as an answer shows it; a table row with its column names: ``Team: Flyers; Stanley Cups: 2``."""
        if self.reading is not None and self.reading.names and not self.reading.is_header:
            return self.reading.display() or self.sentence.text
        return self.sentence.text

    @property
    def readable(self) -> str:
        """What the embedder and the term checks read: a table row with its table's title and column names."""
        if self.reading is None:
            return self.sentence.text
        return f"{self.reading.title}\n{self.display}" if self.reading.title else self.display

    @property
    def score(self) -> float:
        return _combined(self.cosine, self.lexical)


def _combined(cosine: float, lexical: float) -> float:
    return COSINE_WEIGHT * max(cosine, 0.0) + LEXICAL_WEIGHT * lexical


@dataclass(slots=True)
class ScoredPassages:
    query: str
    query_terms: list[str]
    sentences: list[ScoredSentence]  # in source order, then text order
    weights: dict[str, float]

    def of_source(self, source: int) -> list[ScoredSentence]:
        return [s for s in self.sentences if s.source == source]

    def best(self) -> ScoredSentence | None:
        return max(self.sentences, key=lambda s: s.score, default=None)

    @property
    def expects_number(self) -> bool:
        return expects_number(self.query)

    def strength(self, sentence: ScoredSentence) -> float:
        """How good an answer the sentence would be (``score`` discounted as the module says)."""
        value = sentence.score * min(1.0, 0.4 + 0.6 * sentence.new_terms / INFORMATIVE_TERMS)
        if sentence.is_heading or sentence.is_header_row or sentence.is_contents:
            value *= HEADING_FACTOR
        if self.expects_number and not sentence.has_number:
            value *= NO_NUMBER_FACTOR
        return value


def _bounded(sentences: list[Sentence], query_terms: list[str], limit: int) -> list[Sentence]:
    """At most ``limit`` sentences of one passage: those sharing most terms with the question, in order."""
    if len(sentences) <= limit:
        return sentences
    wanted = set(query_terms)
    overlap = [len(wanted & set(terms(sentence.text))) for sentence in sentences]
    keep = sorted(range(len(sentences)), key=lambda i: (-overlap[i], i))[:limit]
    return [sentences[i] for i in sorted(keep)]


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


async def score_passages(
    query: str, passages: Sequence[str], embedder: EmbeddingService, *, question: str | None = None
) -> ScoredPassages:
    """``query``: what was searched (a follow-up together with the previous user turn); ``question``: the
    follow-up as asked, when it differs. A sentence then scores the better of the two: the previous turn
    names the subject ("DPR"), the follow-up what is asked about it ("which pretrained model"), and a
    sentence answering the follow-up need not repeat the subject."""
    query_terms = terms(query)
    per_source = max(MAX_SENTENCES // max(len(passages), 1), 1)
    candidates: list[tuple[int, Sentence, RowReading | None]] = []
    antecedents: dict[tuple[int, Sentence], Sentence] = {}
    for source, text in enumerate(passages):
        sentences = split_sentences(text)
        rows = read_rows(text, sentences)
        candidates.extend(
            (source, sentence, rows.get(sentence)) for sentence in _bounded(sentences, query_terms, per_source)
        )
        for before, sentence in itertools.pairwise(sentences):
            if _PERSONAL_PRONOUN.search(sentence.text) and not before.is_table_row and not sentence.is_table_row:
                antecedents[(source, sentence)] = before
    # A table row is read with its title and column names ("Flyers,PHI,2" says little alone).
    readable = [
        ScoredSentence(source, sentence, [], 0.0, 0.0, reading=reading).readable
        for source, sentence, reading in candidates
    ]
    sentence_terms = [terms(text) for text in readable]
    weights = idf(sentence_terms)
    cosines = np.zeros(len(candidates), dtype=np.float32)
    question_cosines = cosines
    vectors: np.ndarray | None = None
    follow_up = question is not None and question.strip() != query.strip()
    if candidates:
        query_vector = _unit(await embedder.embed_query(query))
        vectors = _unit(await embedder.embed_documents(readable))
        cosines = vectors @ query_vector.reshape(-1)
        if follow_up:
            question_cosines = vectors @ _unit(await embedder.embed_query(question or "")).reshape(-1)
    question_terms = terms(question or "") if follow_up else []
    asked = set(query_terms)
    code = [code_spans(text) for text in passages]
    scored = []
    for i, ((source, sentence, reading), found) in enumerate(zip(candidates, sentence_terms, strict=True)):
        has_number = bool(numbers(sentence.text))
        cosine, lexical = float(cosines[i]), weighted_coverage(query_terms, set(found), weights)
        if follow_up:
            by_question = float(question_cosines[i]), weighted_coverage(question_terms, set(found), weights)
            if _combined(*by_question) > _combined(cosine, lexical):
                cosine, lexical = by_question
        scored.append(
            ScoredSentence(
                source=source,
                sentence=sentence,
                terms=found,
                cosine=cosine,
                lexical=lexical,
                vector=None if vectors is None else vectors[i],
                new_terms=len(set(found) - asked),
                has_number=has_number,
                is_heading=bool(_HEADING.match(passages[source][sentence.start : sentence.end])),
                is_header_row=reading is not None and reading.is_header,
                is_contents=is_contents_entry(sentence.text),
                in_code=any(start <= sentence.start < end for start, end in code[source]),
                reading=reading,
                question_cosine=float(question_cosines[i]) if follow_up else None,
                antecedent=antecedents.get((source, sentence)),
            )
        )
    # The strongest sentences get their closeness to the asked noun ("how tall" for "the height"), for ``focus``.
    asked_about = asked_nouns(question or query.split("\n")[-1])
    checked = sorted(scored, key=lambda s: s.score, reverse=True)[:ASKED_CHECKS]
    similarities = await asked_similarities(asked_about, [s.readable for s in checked], embedder)
    for strong, similarity in zip(checked, similarities, strict=True):
        strong.asked_similarity = similarity
    return ScoredPassages(query, query_terms, scored, weights)

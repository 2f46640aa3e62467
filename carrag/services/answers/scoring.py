"""Score every sentence of the retrieved passages against the question.

A sentence's score mixes the embedder's cosine similarity to the question (one batched call for
all sentences; the embedding cache makes repeats free) with lexical evidence: the share of the
question's content terms it contains, each weighted by its rarity among the candidate sentences,
so numbers and rare terms of the question count most. The scores serve the refusal decision, the
choice of what the model sees, the extractive answer and the highlights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from carrag.services.answers.evidence import idf, terms, weighted_coverage
from carrag.services.answers.sentences import Sentence, split_sentences
from carrag.services.embedders.service import EmbeddingService

COSINE_WEIGHT = 0.55
LEXICAL_WEIGHT = 0.45
MAX_SENTENCES = 160  # bound the embedding work of one request (top_k × window × sentences)


@dataclass(slots=True)
class ScoredSentence:
    source: int  # 0-based position in the request's sources
    sentence: Sentence
    terms: list[str]
    cosine: float
    lexical: float
    vector: np.ndarray | None = None

    @property
    def score(self) -> float:
        return COSINE_WEIGHT * max(self.cosine, 0.0) + LEXICAL_WEIGHT * self.lexical


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


async def score_passages(query: str, passages: Sequence[str], embedder: EmbeddingService) -> ScoredPassages:
    query_terms = terms(query)
    per_source = max(MAX_SENTENCES // max(len(passages), 1), 1)
    candidates: list[tuple[int, Sentence]] = []
    for source, text in enumerate(passages):
        candidates.extend((source, sentence) for sentence in _bounded(split_sentences(text), query_terms, per_source))
    sentence_terms = [terms(sentence.text) for _, sentence in candidates]
    weights = idf(sentence_terms)
    cosines = np.zeros(len(candidates), dtype=np.float32)
    vectors: np.ndarray | None = None
    if candidates:
        query_vector = _unit(await embedder.embed_query(query))
        vectors = _unit(await embedder.embed_documents([sentence.text for _, sentence in candidates]))
        cosines = vectors @ query_vector.reshape(-1)
    scored = [
        ScoredSentence(
            source=source,
            sentence=sentence,
            terms=found,
            cosine=float(cosines[i]),
            lexical=weighted_coverage(query_terms, set(found), weights),
            vector=None if vectors is None else vectors[i],
        )
        for i, ((source, sentence), found) in enumerate(zip(candidates, sentence_terms, strict=True))
    ]
    return ScoredPassages(query, query_terms, scored, weights)

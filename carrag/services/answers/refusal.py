""" "The documents don't say": decide whether any retrieved passage is relevant enough to answer from.

The relevance of a request is its best sentence score (``scoring``: the embedder's cosine mixed
with rarity-weighted term overlap). Below ``ANSWER_MIN_RELEVANCE`` (or the request's
``min_relevance``) the answer says the documents do not contain it, lists the closest passages,
and no LLM runs. When a cross-encoder reranked the passages, its score is a second, independent
signal: a top rerank score at or above ``ANSWER_MIN_RERANK_SCORE`` makes the question answerable
even when the sentence evidence is weak (the reranker reads the passage as a whole).

Whatever the scores, a question that names something no passage mentions (a number, year or code,
or a capitalised name: "revenue in 2015", "the Boston Bruins") is not answerable from them: the
passages are about something else that looks alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from carrag.services.answers.evidence import key_terms, numbers, terms
from carrag.services.answers.scoring import ScoredPassages

NO_ANSWER_TEXT = "The documents do not contain the answer to this question."


@dataclass(slots=True)
class Relevance:
    answerable: bool
    relevance: float  # the best sentence score, 0..1
    rerank_score: float | None  # the best rerank score, when reranked
    missing: list[str] = field(default_factory=list)  # key terms of the question no passage mentions

    def explain(self, threshold: float) -> str:
        if self.missing:
            return f"no passage mentions {', '.join(self.missing)}"
        extra = f", rerank {self.rerank_score:.2f}" if self.rerank_score is not None else ""
        return f"no passage is relevant enough (relevance {self.relevance:.2f}{extra} < {threshold:.2f})"


def judge_relevance(
    scored: ScoredPassages,
    *,
    min_relevance: float,
    rerank_scores: Sequence[float | None] = (),
    min_rerank_score: float | None = None,
    question: str | None = None,
    passages: Sequence[str] = (),
) -> Relevance:
    """``question``: the question as asked (its key terms are checked against ``passages``);
    ``scored`` may have been scored with a longer retrieval query (a follow-up)."""
    best = scored.best()
    relevance = round(best.score, 4) if best is not None else 0.0
    reranks = [score for score in rerank_scores if score is not None]
    top_rerank = max(reranks) if reranks else None
    answerable = best is not None and relevance >= min_relevance
    if not answerable and best is not None and top_rerank is not None and min_rerank_score is not None:
        answerable = top_rerank >= min_rerank_score
    missing = missing_key_terms(question, passages) if question and min_relevance > 0 else []
    return Relevance(answerable and not missing, relevance, top_rerank, missing)


def missing_key_terms(question: str, passages: Sequence[str]) -> list[str]:
    text = "\n".join(passages)
    lowered = text.lower()
    mentioned = set(terms(text)) | numbers(text, spelled=True) | set(lowered.split())
    squashed = "".join(lowered.split()).replace("-", "")

    def found(term: str) -> bool:
        if term in mentioned:
            return True  # codes also match written apart or without hyphens: top-5, top 5, top5
        return any(ch.isdigit() for ch in term) and term.replace("-", "") in squashed

    return sorted(term for term in key_terms(question) if not found(term))


def no_answer_text(source_count: int) -> str:
    if not source_count:
        return NO_ANSWER_TEXT
    return f"{NO_ANSWER_TEXT} The {source_count} closest passages are listed as sources."

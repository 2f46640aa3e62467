""" "The documents don't say": decide whether any retrieved passage is relevant enough to answer from.

The relevance of a request is its best sentence score (``scoring``: the embedder's cosine mixed
with rarity-weighted term overlap). Below ``ANSWER_MIN_RELEVANCE`` (or the request's
``min_relevance``) the answer says the documents do not contain it, lists the closest passages,
and no LLM runs. When a cross-encoder reranked the passages, its score is a second, independent
signal: a top rerank score at or above ``ANSWER_MIN_RERANK_SCORE`` makes the question answerable
even when the sentence evidence is weak (the reranker reads the passage as a whole).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from carrag.services.answers.scoring import ScoredPassages

NO_ANSWER_TEXT = "The documents do not contain the answer to this question."


@dataclass(slots=True)
class Relevance:
    answerable: bool
    relevance: float  # the best sentence score, 0..1
    rerank_score: float | None  # the best rerank score, when reranked

    def explain(self) -> str:
        extra = f", rerank {self.rerank_score:.2f}" if self.rerank_score is not None else ""
        return f"relevance {self.relevance:.2f}{extra}"


def judge_relevance(
    scored: ScoredPassages,
    *,
    min_relevance: float,
    rerank_scores: Sequence[float | None] = (),
    min_rerank_score: float | None = None,
) -> Relevance:
    best = scored.best()
    relevance = round(best.score, 4) if best is not None else 0.0
    reranks = [score for score in rerank_scores if score is not None]
    top_rerank = max(reranks) if reranks else None
    answerable = best is not None and relevance >= min_relevance
    if not answerable and best is not None and top_rerank is not None and min_rerank_score is not None:
        answerable = top_rerank >= min_rerank_score
    return Relevance(answerable, relevance, top_rerank)


def no_answer_text(source_count: int) -> str:
    if not source_count:
        return NO_ANSWER_TEXT
    return f"{NO_ANSWER_TEXT} The {source_count} closest passages are listed as sources."

""" "The documents don't say": decide whether any retrieved passage is relevant enough to answer from.

The relevance of a request is its best sentence score (``scoring``: the embedder's cosine mixed
with rarity-weighted term overlap). Below ``ANSWER_MIN_RELEVANCE`` (or the request's
``min_relevance``) the answer says the documents do not contain it, lists the closest passages,
and no LLM runs. When a cross-encoder reranked the passages, its score is a second, independent
signal: a top rerank score at or above ``ANSWER_MIN_RERANK_SCORE`` makes the question answerable
even when the sentence evidence is weak (the reranker reads the passage as a whole).

Whatever the scores, a question that names something no passage mentions (a number, year or code,
or a capitalised name: "revenue in 2015", "the Boston Bruins") is not answerable from them: the
passages are about something else that looks alike. A name may also be in a passage's document
title or file name ("the Vodafone workbook"); a word written with a footnote mark ("Center1") or
inside a hyphenated word ("White-headed") counts as mentioned.

And a relevant passage is not yet an answer: unless one of the strongest sentences covers the
question's own focus, holds the kind of answer it asks for (``focus``: a number for "how many",
a name for "who") and names what the question asks about (``asked``: the email, not only Jim), the
documents don't say (``ANSWER_MIN_FOCUS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from carrag.services.answers.evidence import missing_key_terms
from carrag.services.answers.focus import answering_sentence, ranked_candidates
from carrag.services.answers.question_types import expects_number, expects_person
from carrag.services.answers.scoring import ScoredPassages

NO_ANSWER_TEXT = "The documents do not contain the answer to this question."


@dataclass(slots=True)
class Relevance:
    answerable: bool
    relevance: float  # the best sentence score, 0..1
    rerank_score: float | None  # the best rerank score, when reranked
    missing: list[str] = field(default_factory=list)  # key terms of the question no passage mentions
    unanswered: str | None = None  # why no sentence answers the question (``focus``)

    def explain(self, threshold: float) -> str:
        if self.missing:
            return f"no passage mentions {', '.join(self.missing)}"
        if self.unanswered:
            return self.unanswered
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
    sources: Sequence[tuple[str, str]] = (),
    min_focus: float = 0.0,
) -> Relevance:
    """``question``: the question as asked (its key terms are checked against ``passages`` and their
    documents' titles, its focus against the strongest sentences); ``scored`` may have been
    scored with a longer retrieval query (a follow-up)."""
    best = scored.best()
    relevance = round(best.score, 4) if best is not None else 0.0
    reranks = [score for score in rerank_scores if score is not None]
    top_rerank = max(reranks) if reranks else None
    answerable = best is not None and relevance >= min_relevance
    if not answerable and best is not None and top_rerank is not None and min_rerank_score is not None:
        answerable = top_rerank >= min_rerank_score
    titles = [title for title, _ in sources]
    missing = missing_key_terms(question, [*passages, *titles]) if question and min_relevance > 0 else []
    unanswered = None
    if answerable and not missing and question and min_relevance > 0:
        unanswered = unanswered_reason(question, scored, min_focus, sources)
    return Relevance(answerable and not missing and unanswered is None, relevance, top_rerank, missing, unanswered)


def unanswered_reason(
    question: str, scored: ScoredPassages, min_focus: float, sources: Sequence[tuple[str, str]] = ()
) -> str | None:
    """None when one of the strongest sentences answers ``question``; else why none does."""
    if answering_sentence(question, scored, ranked_candidates(scored), min_focus, sources) is not None:
        return None
    wanted = "a number" if expects_number(question) else "a name" if expects_person(question) else None
    kind = f" with {wanted}" if wanted else ""
    return f"no retrieved sentence{kind} covers what the question asks (focus < {min_focus:.2f})"


def no_answer_text(source_count: int) -> str:
    if not source_count:
        return NO_ANSWER_TEXT
    if source_count == 1:
        return f"{NO_ANSWER_TEXT} The closest passage is listed as a source."
    return f"{NO_ANSWER_TEXT} The {source_count} closest passages are listed as sources."

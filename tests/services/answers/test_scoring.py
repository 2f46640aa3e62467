from __future__ import annotations

import pytest

from carrag.services.answers.refusal import judge_relevance
from carrag.services.answers.scoring import is_contents_entry, score_passages
from carrag.services.settings import Settings

THRESHOLD = Settings.model_fields["answer_min_relevance"].default
PAPER = (
    "We present Spark, a sparse retrieval model for legal search. Spark indexes statutes and court decisions. "
    "Its encoder is initialised from the RoBERTa pretrained language model and fine-tuned on case law."
)


async def test_a_follow_up_is_scored_by_its_own_words_too(embedder) -> None:
    """The retrieval query joins the previous turn (the subject) and the follow-up; the answering sentence
    matches the follow-up's words but not the previous turn's, and was refused as not relevant enough."""
    follow_up = "Which pretrained model does it start from?"
    query = "What does the Spark paper present?\n" + follow_up
    joined = await score_passages(query, [PAPER], embedder)
    both = await score_passages(query, [PAPER], embedder, question=follow_up)
    best = both.best()
    assert best is not None and "RoBERTa" in best.sentence.text
    by_text = {s.sentence.text: s.score for s in joined.sentences}
    assert best.score > by_text[best.sentence.text]
    assert judge_relevance(both, min_relevance=THRESHOLD).answerable


async def test_a_question_that_is_its_own_query_scores_as_before(embedder) -> None:
    question = "Which pretrained model is the encoder initialised from?"
    alone = await score_passages(question, [PAPER], embedder)
    same = await score_passages(question, [PAPER], embedder, question=question)
    assert [s.score for s in alone.sentences] == [s.score for s in same.sentences]


@pytest.mark.parametrize(
    ("line", "contents"),
    [
        ("2.1.7 Verifying function usage IDs for RCAC with the FUNCTION_USAGE view . . . . . 10", True),
        ("Chapter 3. Row and Column Access Control........ 13", True),
        ("Wait... what? The engine stopped.", False),
        ("Version 1.2.3.4 adds support for e.g. Python 3.13.", False),
    ],
)
def test_table_of_contents_entries_are_recognised(line: str, contents: bool) -> None:
    assert is_contents_entry(line) is contents

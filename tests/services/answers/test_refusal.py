from __future__ import annotations

from carrag.services.answers.refusal import judge_relevance, no_answer_text
from carrag.services.answers.scoring import score_passages
from carrag.services.settings import Settings

PASSAGES = [
    "Engine oil service\nThe correct oil filter for the 3.5L EcoBoost engine is the Motorcraft FL-500S.",
    "Towing\nThe maximum towing capacity is 13,200 lbs with the Max Trailer Tow Package.",
]
THRESHOLD = Settings.model_fields["answer_min_relevance"].default


async def test_an_off_topic_question_is_not_answerable(embedder) -> None:
    for question in ("What is the capital of Mongolia?", "Who painted the Mona Lisa?"):
        scored = await score_passages(question, PASSAGES, embedder)
        relevance = judge_relevance(scored, min_relevance=THRESHOLD)
        assert not relevance.answerable, (question, relevance)


async def test_an_on_topic_question_is_answerable(embedder) -> None:
    for question in ("Which oil filter fits the EcoBoost?", "How much can the truck tow?"):
        scored = await score_passages(question, PASSAGES, embedder)
        relevance = judge_relevance(scored, min_relevance=THRESHOLD)
        assert relevance.answerable, (question, relevance)


async def test_the_threshold_override_and_the_reranker_signal(embedder) -> None:
    scored = await score_passages("What is the capital of Mongolia?", PASSAGES, embedder)
    assert judge_relevance(scored, min_relevance=0.0).answerable, "0 never refuses"
    vouched = judge_relevance(scored, min_relevance=THRESHOLD, rerank_scores=[0.9, 0.1], min_rerank_score=0.5)
    assert vouched.answerable and vouched.rerank_score == 0.9
    doubted = judge_relevance(scored, min_relevance=THRESHOLD, rerank_scores=[0.2, None], min_rerank_score=0.5)
    assert not doubted.answerable


def test_the_no_answer_text_points_at_the_closest_passages() -> None:
    assert "do not contain" in no_answer_text(3) and "3 closest passages" in no_answer_text(3)
    assert no_answer_text(1).endswith("The closest passage is listed as a source."), "one passage, said as one"


def test_key_terms_are_found_in_table_rows_and_missing_ones_are_named() -> None:
    from carrag.services.answers.refusal import missing_key_terms

    table = "In millions of CHF,Sales,Profit\nZone NA,12553,2713\nZone EUR,9467,1570"
    assert missing_key_terms("What were Zone NA sales in millions of CHF?", [table]) == []
    assert missing_key_terms("What were Zone NA sales in 2015?", [table]) == ["2015"]
    assert missing_key_terms("How many Stanley Cups have the Boston Bruins won?", [table]) == [
        "boston",
        "bruin",
        "cup",
        "stanley",
    ]


def test_names_count_as_mentioned_with_a_footnote_mark_inside_a_hyphenated_word_or_in_a_title() -> None:
    from carrag.services.answers.evidence import missing_key_terms

    assert (
        missing_key_terms(
            "What does the Identity Theft Resource Center report?", ["The Identity Theft Resource Center1 reports"]
        )
        == []
    )
    assert missing_key_terms("How long is the White-headed duck?", ["| White-headed duck | 45 cm |"]) == []
    assert missing_key_terms("Which page of the Vodafone workbook?", ["Topic,Page", "vodafone.xlsx"]) == []

from __future__ import annotations

from carrag.services.answers.evidence import idf, missing_key_terms, numbers, terms, weighted_coverage


def test_terms_drop_stop_words_stem_plurals_and_keep_codes() -> None:
    assert terms("What sizes does the FL-500S filter come in? 7,500 miles") == [
        "size",
        "fl-500s",
        "filter",
        "come",
        "7500",
        "mile",
    ]


def test_numbers_are_normalised_and_spelled_ones_only_when_asked() -> None:
    assert numbers("7,500 miles, 3.50 L, in 2019") == {"7500", "3.5", "2019"}
    assert numbers("retained for thirty days, twenty-one items") == set()
    assert numbers("retained for thirty days, twenty-one items", spelled=True) == {"30", "21"}


def test_rare_terms_weigh_more() -> None:
    sentences = [terms("oil filter FL-500S"), terms("oil level"), terms("oil change interval")]
    weights = idf(sentences)
    assert weights["fl-500s"] > weights["oil"]
    query = terms("Which oil filter is the FL-500S?")
    assert weighted_coverage(query, set(sentences[0]), weights) == 1.0
    assert weighted_coverage(query, set(sentences[1]), weights) < 0.3


def test_a_number_the_question_names_is_mentioned_only_as_a_whole_token() -> None:
    sheet = "Topic: Store churn; Period: FY 2022 to FY 2023"
    assert missing_key_terms("What was the store churn in FY 23?", [sheet]) == ["23"]
    assert missing_key_terms("What was the store churn in FY 23?", [sheet + "; Guidance: FY 23/24"]) == []
    assert missing_key_terms("Which model reaches the best top-5 score?", ["its top 5 score"]) == []

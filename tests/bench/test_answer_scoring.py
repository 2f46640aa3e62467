"""The answer benchmark's scoring on hand-made /query responses."""

from types import SimpleNamespace

import pytest

from carrag.bench.answer_scoring import (
    AnswerScore,
    ModeSummary,
    check_citations,
    cited_numbers,
    contains_phrase,
    invented_numbers,
    is_correct,
    is_refusal,
    median,
    normalise,
    percentile,
    score_answer,
)

SOURCES = [
    {"text": "Boots self-locking nuts can be removed and reused without impairing\ntheir efficiency."},
    {"text": "Zone NA,12553,2713,2632\nTotal,46293,7904,7351"},
    {"text": "India's largest company BY REVENUE `7,92,756 crore. New jobs created: 2,32,822."},
]


def question(answerable: bool = True, **fields: object) -> SimpleNamespace:
    base = {"id": "q", "kind": "factoid", "answerable": answerable, "accepted": (), "evidence": ()}
    return SimpleNamespace(**(base | fields))


def test_normalise_folds_case_accents_emphasis_dashes_and_thousands() -> None:
    assert normalise("The word *dūce*  'diver'") == "the word duce 'diver'"
    assert normalise("0.39 – 0.46") == "0.39-0.46"
    assert normalise("12,553 and 23,718,968 and 7,92,756") == "12553 and 23718968 and 792756"
    assert normalise("Nespresso,3128,678,672") == "nespresso,3128,678,672", "CSV cells are not thousands"
    assert normalise("ﬁne-\n tuned") == "fine-tuned"


def test_phrases_match_whole_words_only() -> None:
    assert contains_phrase("No, they are not mandatory.", "no")
    assert not contains_phrase("They are not mandatory.", "no"), "'no' is not inside 'not'"
    assert not contains_phrase("In 21130 units", "2113")
    assert contains_phrase("The elongation is 12%.", "12%")
    assert contains_phrase("| Bars | **890** | **1000** | **12** |", "| 12 |")


def test_an_accepted_list_entry_needs_every_part() -> None:
    accepted = [["TF-IDF", "BM25"], "sparse retrieval"]
    assert is_correct("Such as TF-IDF or BM25 [Source 1].", accepted)
    assert not is_correct("BM25 [Source 1].", accepted)
    assert is_correct("It uses Sparse  Retrieval.", accepted)
    assert is_correct("Revenue was ₹7,92,756 crore.", ["7,92,756"])
    assert not is_correct("Revenue was 7,92,757 crore.", ["7,92,756"])


def test_citation_markers_in_every_written_form() -> None:
    answer = "A [Source 2]. B [Sources 1 and 3]. C [Source 1, 4]. D [Source 2: wikiHow]. E [source 5]"
    assert cited_numbers(answer) == [2, 1, 3, 1, 4, 2, 5]
    assert cited_numbers("No citation here [1].") == []


def test_a_citation_is_valid_only_for_a_listed_source_with_the_evidence() -> None:
    checks = check_citations(
        "Yes, they can be reused [Source 1]. Zone NA sold 12553 [Source 2]. See [Source 7].",
        SOURCES,
        ["removed and reused without impairing their efficiency"],
    )
    assert [(c.number, c.listed, c.has_evidence, c.valid) for c in checks] == [
        (1, True, True, True),
        (2, True, False, False),  # listed, but it does not hold the evidence
        (7, False, False, False),  # a phantom source
    ]


def test_refusal_comes_from_the_answerable_flag_when_present() -> None:
    assert is_refusal({"answer": "Paris is the capital.", "answerable": False})
    assert not is_refusal({"answer": "The documents do not say.", "answerable": True}), "the flag wins"
    assert is_refusal({"answer": "The documents don't say what the capital of Mongolia is."})
    assert is_refusal({"answer": "I cannot answer that from the provided context."})
    assert is_refusal({"answer": "There is no information about Mongolia in the sources."})
    assert not is_refusal({"answer": "Ulaanbaatar is the capital [Source 1]."})
    assert not is_refusal({"answer": "The nut cannot be loosened by vibration [Source 1]."})


def test_invented_numbers_are_those_in_no_source() -> None:
    assert invented_numbers("Revenue was 7,92,756 crore [Source 3].", SOURCES) == set()
    assert invented_numbers("Revenue was approximately 1.28 billion USD [Source 3].", SOURCES) == {"1.28"}
    assert invented_numbers("1. Zone NA sold 12553.\n2. Total 46293.", SOURCES) == set(), (
        "list numbering is not a number"
    )
    assert invented_numbers("It has 12553.0 [Source 9].", SOURCES) == set(), "12553.0 is 12553; [Source 9] is no number"


def test_score_answer_puts_it_together() -> None:
    q = question(accepted=("yes", "removed and reused"), evidence=("removed and reused",), kind="yesno")
    good = score_answer(q, {"answer": "Yes, it can be removed and reused [Source 1].", "sources": SOURCES}, 0.5)
    assert (good.correct, good.refused, [c.valid for c in good.citations], good.invented) == (
        True,
        False,
        [True],
        set(),
    )
    refused = score_answer(q, {"answer": "Yes.", "answerable": False, "sources": SOURCES}, 0.1)
    assert refused.refused and not refused.correct, "a refusal is never a correct answer"
    flagged = score_answer(
        question(False), {"answer": "The 3 closest passages are listed.", "answerable": False, "sources": SOURCES}, 0
    )
    assert flagged.refused and flagged.invented == set(), "the server's refusal text claims nothing"
    worded = score_answer(question(False), {"answer": "I don't know, maybe 42.", "sources": SOURCES}, 0)
    assert worded.refused and worded.invented == {"42"}, "without the flag, the text is checked"
    unanswerable = score_answer(
        question(False), {"answer": "It is 42 [Source 1].", "sources": SOURCES, "answer_mode": "generate"}, 1.0
    )
    assert not unanswerable.refused and unanswerable.invented == {"42"} and unanswerable.citations == []
    assert unanswerable.answer_mode == "generate"
    marked = score_answer(q, {"answer": "Yes [Source 1]. It is blue.", "grounding": {"unsupported": [1]}}, 1.0)
    assert marked.unsupported_sentences == 1 and good.unsupported_sentences == 0


def test_percentiles() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert percentile([float(n) for n in range(1, 21)], 0.95) == 19.0
    assert percentile([5.0], 0.95) == 5.0
    assert median([]) == percentile([], 0.95) == 0.0


def test_mode_summary_counts() -> None:
    def score(answerable: bool, refused: bool, correct: bool, valid: list[bool], invented: set[str], seconds: float):
        from carrag.bench.answer_scoring import CitationCheck

        citations = [CitationCheck(1, True, ok) for ok in valid]
        return AnswerScore("q", "k", answerable, refused, correct, citations, invented, seconds, "extract", None)

    scores = [
        score(True, False, True, [True, True], set(), 1.0),
        score(True, False, False, [False], {"7"}, 2.0),
        score(True, True, False, [], set(), 3.0),
        score(False, True, False, [], set(), 4.0),
        score(False, False, False, [], {"9"}, 5.0),
    ]
    summary = ModeSummary.of("extract", scores, errors=1)
    assert summary.accuracy == pytest.approx(1 / 3)
    assert summary.citation_validity == pytest.approx(2 / 3)
    assert summary.refusal_rate == pytest.approx(1 / 2)
    assert (summary.refused_answerable, summary.answers_with_invented_numbers, summary.cited_answers) == (1, 2, 2)
    assert summary.median_seconds == 3.0 and summary.p95_seconds == 5.0
    assert summary.as_dict()["served_answer_modes"] == {"extract": 5} and summary.errors == 1
    assert summary.by_kind == {"k": (1, 3)}, "answerable questions only"
    scores[1].unsupported_sentences = 2
    assert ModeSummary.of("generate", scores).as_dict()["answers_with_unsupported_sentences"] == 1

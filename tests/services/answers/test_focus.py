from __future__ import annotations

import pytest

from carrag.services.answers.extractive import extract_answer
from carrag.services.answers.focus import answering_sentence, ranked_candidates
from carrag.services.answers.question_types import expects_number, expects_person
from carrag.services.answers.refusal import judge_relevance
from carrag.services.answers.scoring import score_passages

MIN_FOCUS = 0.3
FAQ = (
    "Python 3.13 is supported from Docling 2.18.0. Numpy is only adding Python 3.13 support in some 2.x.y version. "
    "Docling supports numpy versions below 3.0.0 which should match all usages. "
    "Python 3.14 is supported from Docling 2.59.0."
)
DATASHEET = (
    "Steel SNB22-3\nProperties of SNB22-3: density, tensile strength, hardness and elongation.\n"
    "SNB22-3 bars are used for bolts and nuts in nuclear reactors."
)
DUCKS = "Basic duck facts\n\n| Name | Habitat |\n| --- | --- |\n| Wood Duck |  |\n| Mallard | Ponds, lakes |"
BREACHES = (
    "Almost 5000 data breaches have occurred since 2005, exposing over 600 million records of data. "
    "Breaches cost more every year."
)


@pytest.mark.parametrize(
    ("question", "number"),
    [
        ("How many caps did he win?", True),
        ("What TED score does OTSL reach on FinTabNet?", True),
        ("From which Docling version is Python 3.14 supported?", True),
        ("What is the density of SNB22-3?", True),
        ("What was its height increased to accommodate?", False),
        ("What is the default setting of the QCRTAUT system value?", False),
        ("What is the habitat of the Mallard?", False),
    ],
)
def test_questions_asking_for_a_quantity(question: str, number: bool) -> None:
    assert expects_number(question) is number


def test_questions_asking_for_a_person() -> None:
    assert expects_person("Who appoints the trustees?") and not expects_person("What do trustees do?")


async def first_answer(embedder, question: str, passages: list[str]):
    scored = await score_passages(question, passages, embedder)
    return scored, answering_sentence(question, scored, ranked_candidates(scored), MIN_FOCUS)


async def test_the_sentence_with_the_number_the_question_names_answers(embedder) -> None:
    _, sentence = await first_answer(embedder, "From which Docling version is Python 3.14 supported?", [FAQ])
    assert sentence is not None and sentence.sentence.text == "Python 3.14 is supported from Docling 2.59.0."


async def test_a_property_named_without_a_value_does_not_answer_a_quantity_question(embedder) -> None:
    scored, sentence = await first_answer(embedder, "What is the density of SNB22-3?", [DATASHEET])
    assert sentence is None
    relevance = judge_relevance(
        scored, min_relevance=0.1, question="What is the density of SNB22-3?", passages=[DATASHEET], min_focus=MIN_FOCUS
    )
    assert not relevance.answerable and "with a number" in (relevance.unanswered or "")
    with_value = DATASHEET + " The tensile strength of SNB22-3 is at least 1000 MPa."
    _, tensile = await first_answer(embedder, "What is the tensile strength of SNB22-3?", [with_value])
    assert tensile is not None and "1000" in tensile.sentence.text


async def test_a_row_with_an_empty_cell_under_the_asked_column_does_not_answer(embedder) -> None:
    _, sentence = await first_answer(embedder, "What is the habitat of the Wood Duck?", [DUCKS])
    assert sentence is None, "the Wood Duck's Habitat cell is empty; the Mallard row is about another duck"
    _, mallard = await first_answer(embedder, "What is the habitat of the Mallard?", [DUCKS])
    assert mallard is not None and mallard.display == "Name: Mallard; Habitat: Ponds, lakes"


async def test_a_year_the_question_names_must_be_in_the_answer(embedder) -> None:
    _, sentence = await first_answer(embedder, "How many records were exposed by data breaches in 2013?", [BREACHES])
    assert sentence is None
    _, since = await first_answer(embedder, "How many records were exposed by data breaches since 2005?", [BREACHES])
    assert since is not None


async def test_words_in_another_form_cover_the_focus(embedder) -> None:
    text = "IBM is nicknamed Big Blue. IBM was founded in 1911."
    _, sentence = await first_answer(embedder, "What is IBM's nickname?", [text])
    assert sentence is not None and "Big Blue" in sentence.sentence.text


async def test_a_sentence_of_another_passage_that_does_not_answer_is_not_cited(embedder) -> None:
    question = "In which year did Salford debunk the echo myth?"
    passages = [
        "The myth was first debunked by the University of Salford in 2003.",
        "In 2002, a year-long LaughLab experiment concluded that ducks attract the most humour.",
    ]
    scored = await score_passages(question, passages, embedder)
    answer = extract_answer(scored, question=question, min_focus=MIN_FOCUS)
    assert "[Source 2]" not in answer.text and "2003" in answer.text


async def test_a_sentence_saying_the_answer_in_other_words_covers_the_focus(embedder) -> None:
    """The words "kept" and "long" are in no sentence; the embedder sees the paraphrase (was refused)."""
    backups = "The snapshot retention is thirty days. Snapshots run nightly at two in the morning."
    _, sentence = await first_answer(embedder, "How long are snapshots kept?", [backups])
    assert sentence is not None and sentence.sentence.text == "The snapshot retention is thirty days."


async def test_a_close_sentence_without_the_kind_of_answer_asked_for_still_does_not_answer(embedder) -> None:
    backups = "Snapshots are kept for a while. Snapshots run nightly."
    _, sentence = await first_answer(embedder, "How many days are snapshots kept?", [backups])
    assert sentence is None

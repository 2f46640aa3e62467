from __future__ import annotations

import pytest

from carrag.services.answers.asked import asked_nouns


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("What is Ana Silva's email address?", ["address", "email"]),
        ("Who is the chief financial officer of Acme Widgets?", ["officer", "financial"]),
        ("What was her father's name?", ["father"]),
        ("What is the phone number of the hotel?", ["phone"]),
        ("What is the boiling point of ethanol, in degrees?", ["point", "boiling"]),
        ("And what is their postal code?", ["code", "postal"]),
        ("What is the Vickers hardness of the alloy?", ["hardness", "vickers"]),
        ("In which year was the bridge opened?", []),  # a year is answered by the number itself
        ("What is the carbon (C) share of the alloy?", ["share", "carbon"]),
        ("How many spare bolts does the kit contain?", ["bolts", "spare"]),
        ("In how many cities does the chain operate?", ["cities"]),
    ],
)
def test_the_noun_an_attribute_question_asks_about(question: str, asked: list[str]) -> None:
    assert asked_nouns(question) == asked


@pytest.mark.parametrize(
    "question",
    [
        "What does API stand for?",  # a verb's object, not a noun's value
        "Which engine powers the boat?",  # the answer names an instance ("the V6"), not the category
        "What material is the hull made of?",
        "How many Oscars has she won?",  # a name: checked as a key term
        "How much did the ticket cost?",
        "Who repaired the roof?",
        "Is the museum open on Mondays?",
        "What is Ana Silva's?",
        "What is the name?",
    ],
)
def test_questions_that_do_not_ask_for_an_attribute(question: str) -> None:
    assert asked_nouns(question) == []

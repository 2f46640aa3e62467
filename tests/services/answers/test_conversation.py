from __future__ import annotations

import pytest

from carrag.services.answers.conversation import needs_history, retrieval_query
from carrag.services.models import ChatMessage

HISTORY = [
    ChatMessage("user", "Which rubber duck does the shop sell?"),
    ChatMessage("assistant", "The classic yellow rubber duck [Source 1]."),
]


def test_a_follow_up_is_retrieved_with_the_previous_question() -> None:
    assert retrieval_query("What sizes does it come in?", HISTORY) == (
        "Which rubber duck does the shop sell?\nWhat sizes does it come in?"
    )
    assert retrieval_query("Price?", HISTORY).startswith("Which rubber duck")


def test_a_self_contained_question_is_retrieved_as_asked() -> None:
    assert retrieval_query("What is the towing capacity of the F-150?", HISTORY) == (
        "What is the towing capacity of the F-150?"
    )
    assert retrieval_query("What sizes does it come in?", []) == "What sizes does it come in?"


@pytest.mark.parametrize(
    "question",
    [
        "What sizes does it come in?",  # a pronoun with nothing before it to refer to
        "Which pretrained model does it build on?",  # what is asked names no antecedent
        "Is that option on by default?",  # a demonstrative whose noun the question never named
        "What is its default?",
        "And for PostgreSQL?",  # an ellipsis
        "What about the second one?",
        "Why?",
        "When did he die?",
    ],
)
def test_an_unresolved_reference_or_an_ellipsis_needs_the_history(question: str) -> None:
    assert needs_history(question)


@pytest.mark.parametrize(
    "question",
    [
        # the case: after SQLite turns, a question about PostgreSQL is searched on its own
        "What is the numeric precision of PostgreSQL?",
        "How long does the battery last and can it be replaced?",  # "it": the battery, named before
        "What does the -b option do, and what is its default?",
        "Which option sets the port that the server listens on?",  # "that": a relative pronoun
    ],
)
def test_a_question_that_stands_on_its_own_does_not(question: str) -> None:
    assert not needs_history(question)

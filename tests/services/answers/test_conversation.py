from __future__ import annotations

from carrag.services.answers.conversation import retrieval_query
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

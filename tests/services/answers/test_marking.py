"""Unsupported sentences made visible in the text: marks for the terminal, a note for OpenAI clients."""

from __future__ import annotations

from carrag.services.answers.marking import MARK, NOTE_HEADING, mark_unsupported, unsupported_note

ANSWER = "The pressure is 35 psi [Source 1]. It holds 4.8 pounds [Source 1]. Check it monthly."
GROUNDING = {
    "grounded": False,
    "sentences": [
        {"text": "The pressure is 35 psi [Source 1].", "start": 0, "end": 34, "supported": True},
        {"text": "It holds 4.8 pounds [Source 1].", "start": 35, "end": 66, "supported": False},
        {"text": "Check it monthly.", "start": 67, "end": 84, "supported": False},
    ],
}


def test_each_unsupported_sentence_is_marked_where_it_ends() -> None:
    assert mark_unsupported(ANSWER, GROUNDING) == (
        f"The pressure is 35 psi [Source 1]. It holds 4.8 pounds [Source 1]. {MARK} Check it monthly. {MARK}"
    )


def test_stale_offsets_fall_back_to_the_sentence_text() -> None:
    shifted = "Note: " + ANSWER
    marked = mark_unsupported(shifted, GROUNDING)
    assert marked.count(MARK) == 2 and marked.startswith("Note: The pressure is 35 psi [Source 1]. It holds")


def test_nothing_is_marked_without_unsupported_sentences() -> None:
    supported = {"sentences": [{**GROUNDING["sentences"][0]}]}
    assert mark_unsupported(ANSWER, supported) == ANSWER
    assert mark_unsupported(ANSWER, None) == ANSWER
    assert unsupported_note(supported) == "" and unsupported_note(None) == ""


def test_the_note_lists_the_unsupported_sentences_without_citations() -> None:
    assert unsupported_note(GROUNDING) == f"\n\n{NOTE_HEADING}\n- It holds 4.8 pounds.\n- Check it monthly."

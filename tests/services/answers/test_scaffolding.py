"""Prompt layout a small model echoes (the acceptance report's SmolLM2 answer) is removed; answers are kept."""

from __future__ import annotations

from carrag.services.answers.scaffolding import strip_prompt_echo
from carrag.services.prompt import PromptSource, build_messages

ECHOED = (
    "The engine takes the Motorcraft FL-500S oil filter [Source 3].\n"
    "Question: Which oil filter fits the engine [Source 2]?\n"
    "Answer based on context above: The engine takes the Motorcraft FL-500S oil filter [Source 3]."
)


def test_the_echoed_question_and_answer_label_are_removed() -> None:
    assert strip_prompt_echo(ECHOED) == (
        "The engine takes the Motorcraft FL-500S oil filter [Source 3].\n\n"
        "The engine takes the Motorcraft FL-500S oil filter [Source 3]."
    )


def test_labels_mid_line_and_separators_are_removed() -> None:
    assert strip_prompt_echo("Use the filter. Answer based on the context above: The FL-500S.") == (
        "Use the filter. The FL-500S."
    )
    assert strip_prompt_echo("Answer: 35 psi.\n---\nContext: front and rear.") == "35 psi.\n\nfront and rear."
    assert strip_prompt_echo("Question: what else") == ""


def test_every_label_of_the_real_prompt_is_recognised() -> None:
    """The stripper follows the prompt Carrag sends: its own lines, echoed whole, leave nothing."""
    prompt = build_messages("Which oil filter?", [PromptSource("a.pdf", "x")], system_prompt="s")[-1].content
    tail = prompt[prompt.index("Question:") :]
    assert strip_prompt_echo(tail) == ""


def test_answers_that_only_look_similar_are_kept() -> None:
    for answer in (
        "Snapshots are retained for thirty days.\n\nThe answer is: 30 days",
        "The ratio is 3:1. The question of cost is open.",
        "Torque: 150 lb-ft [Source 1].",
    ):
        assert strip_prompt_echo(answer) == answer

from __future__ import annotations

from carrag.services.models import ChatMessage
from carrag.services.prompt import PromptSource, build_messages, format_context


def test_seed_prompt_layout() -> None:
    messages = build_messages(
        "What is X?",
        [PromptSource("a.pdf", "alpha text"), PromptSource("b.md", "beta text")],
        system_prompt="Only use the context.",
        history=[ChatMessage("user", "earlier question"), ChatMessage("assistant", "earlier answer")],
    )
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content == "Only use the context."
    assert messages[-1].content == (
        "Context:\n[Source 1: a.pdf]\nalpha text\n\n---\n\n[Source 2: b.md]\nbeta text\n\n"
        "Question: What is X?\n\nAnswer based on the context above:"
    )


def test_history_is_capped_to_the_latest_turns() -> None:
    history = [ChatMessage("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(10)]
    messages = build_messages("q", [], system_prompt="s", history=history, max_history_messages=4)
    assert [m.content for m in messages[1:-1]] == ["turn 6", "turn 7", "turn 8", "turn 9"]
    none = build_messages("q", [], system_prompt="s", history=history, max_history_messages=0)
    assert len(none) == 2


def test_context_budget_keeps_best_sources_first() -> None:
    sources = [PromptSource(f"{i}.txt", "x" * 400) for i in range(5)]
    context = format_context(sources, max_chars=1000)
    assert len(context) <= 1000
    assert context.startswith("[Source 1: 0.txt]") and "[Source 3: 2.txt]" in context
    assert "[Source 4:" not in context and context.endswith("…")

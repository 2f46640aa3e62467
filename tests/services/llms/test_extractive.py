from __future__ import annotations

from carrag.services.llms.base import complete
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.prompt import PromptSource, build_messages


async def test_quotes_sources_with_citations_and_says_it_is_not_generated() -> None:
    messages = build_messages(
        "Which filter?",
        [
            PromptSource("a.pdf", "The oil filter is the FL-500S. It is changed every 7,500 miles. Extra."),
            PromptSource("b.txt", "Tires need 35 psi."),
        ],
        system_prompt="s",
    )
    answer = await complete(ExtractiveLLM("LLM=none"), messages, max_tokens=100, temperature=0)
    assert answer.startswith("No language model is running (LLM=none)")
    assert "The oil filter is the FL-500S. It is changed every 7,500 miles. [Source 1]" in answer
    assert "Tires need 35 psi. [Source 2]" in answer and "Extra." not in answer

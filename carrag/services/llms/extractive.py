"""The clear fallback when no LLM is configured (``LLM=none``) or the local one cannot load.

It does not pretend to generate: it says that no language model is running and quotes the leading
sentences of each numbered source from the prompt, with its citation.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

from carrag.services.models import ChatMessage, ComponentHealth

_SOURCE_BLOCK = re.compile(r"\[Source (\d+): ([^\]]*)\]\n(.*?)(?=\n\n---\n\n\[Source |\n\nQuestion: |\Z)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class ExtractiveLLM:
    provider = "none"
    model = "extractive-fallback"
    capable = False

    def __init__(self, reason: str = "LLM=none") -> None:
        self.reason = reason

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        prompt = messages[-1].content if messages else ""
        blocks = _SOURCE_BLOCK.findall(prompt)
        yield f"No language model is running ({self.reason}), so this is not a generated answer. "
        if not blocks:
            yield "No relevant passages were found."
            return
        yield "The most relevant passages are:\n"
        for number, _filename, text in blocks[:5]:
            sentences = _SENTENCE_END.split(" ".join(text.split()))
            excerpt = " ".join(sentences[:2])[:400]
            yield f"\n- {excerpt} [Source {number}]"

    async def health(self) -> ComponentHealth:
        return ComponentHealth("llm", "degraded", "none", self.model, f"no LLM: {self.reason}; answers are extractive")

    async def aclose(self) -> None:
        return None

"""The LLM port: stream text deltas for a list of chat messages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from carrag.services.models import ChatMessage, ComponentHealth


class LLM(Protocol):
    provider: str  # "local", "ollama", "openai", "none"
    model: str
    capable: bool  # good enough to follow instructions such as the tagging prompt

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        """Yield text deltas (never cumulative text). Raises DependencyUnavailable/UpstreamError."""

    async def health(self) -> ComponentHealth: ...

    async def aclose(self) -> None: ...


async def complete(llm: LLM, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float) -> str:
    """The whole answer as one string."""
    parts = [delta async for delta in llm.stream(messages, max_tokens=max_tokens, temperature=temperature)]
    return "".join(parts)

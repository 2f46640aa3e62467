"""The reranker port: score (question, passage) pairs with a cross-encoder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from carrag.services.models import ComponentHealth


class Reranker(Protocol):
    model: str
    available: bool
    unavailable_reason: str | None

    async def scores(self, question: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is better), computed in one batch."""

    async def health(self) -> ComponentHealth: ...

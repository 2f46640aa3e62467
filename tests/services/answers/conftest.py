from __future__ import annotations

import pytest

from carrag.services.answers.context import FittedSource, fit_context
from carrag.services.answers.scoring import score_passages
from carrag.services.embedders.service import EmbeddingService


@pytest.fixture
def embedder(embedding_backend) -> EmbeddingService:
    return EmbeddingService(embedding_backend)


@pytest.fixture
def fitted_sources(embedder: EmbeddingService):
    """(question, passages) → the sources as the model would see them, scored by the real embedder."""

    async def fit(question: str, passages: list[str], max_chars: int = 12_000) -> list[FittedSource]:
        scored = await score_passages(question, passages, embedder)
        return fit_context(scored, passages, [f"doc{i}.txt" for i in range(len(passages))], max_chars)

    return fit

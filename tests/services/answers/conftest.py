from __future__ import annotations

import pytest

from carrag.services.answers.context import FittedSource, fit_context
from carrag.services.answers.features import Passage, Reading, read_passages
from carrag.services.answers.model import load_model
from carrag.services.embedders.service import EmbeddingService


@pytest.fixture
def embedder(embedding_backend) -> EmbeddingService:
    return EmbeddingService(embedding_backend)


@pytest.fixture
def read(embedder: EmbeddingService):
    """(question, passages) → the passages read and ranked by the committed answer model, with the real embedder."""

    async def reading(question: str, passages: list[str], **kwargs: object) -> Reading:
        found = await read_passages(
            question, [Passage(text, rank=rank) for rank, text in enumerate(passages)], embedder, **kwargs
        )  # type: ignore[arg-type]
        load_model().rank(found)
        return found

    return reading


@pytest.fixture
def fitted_sources(read):
    """(question, passages) → the sources as the model would see them, ranked by the real answer model."""

    async def fit(question: str, passages: list[str], max_chars: int = 12_000) -> list[FittedSource]:
        reading = await read(question, passages)
        return fit_context(reading, [f"doc{i}.txt" for i in range(len(passages))], max_chars)

    return fit

"""The embedding port. Adapters embed one batch; `EmbeddingService` adds batching, caching and retries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from carrag.services.models import ComponentHealth

TextKind = Literal["document", "query"]


class EmbeddingBackend(Protocol):
    provider: str  # "local", "ollama", "openai"
    model: str

    @property
    def identity(self) -> str:
        """``provider:model`` (plus ``:urlhash`` for a custom endpoint), recorded by stores."""

    async def embed(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        """Embed one batch; returns a float32 array of shape (len(texts), dimension)."""

    async def health(self) -> ComponentHealth: ...

    async def aclose(self) -> None: ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms

"""The embedding port. Adapters embed one batch; `EmbeddingService` adds batching, caching and retries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Literal, Protocol

import numpy as np

from carrag.services.models import ComponentHealth

TextKind = Literal["document", "query"]

# Set by a hybrid search in its kNN leg's task (`retrieval/search.py`), whose BM25 request waits until
# the query's embedding is under way. Called (at least once) when it is: by a backend that runs the
# model in a thread of this process (``announces_start``, `local_onnx.py`) as that thread begins the
# work, and by `EmbeddingService` as it starts for any other backend or for a cached vector.
query_under_way: ContextVar[Callable[[], None] | None] = ContextVar("query_under_way", default=None)


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

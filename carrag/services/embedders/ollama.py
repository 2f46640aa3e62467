"""Ollama embeddings over HTTP: ``POST /api/embed`` with a list of inputs.

nomic-embed-text was trained with task prefixes, so for nomic models every text is prefixed with
``search_document:`` or ``search_query:``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import httpx
import numpy as np

from carrag.services.embedders.base import TextKind, l2_normalise
from carrag.services.errors import UpstreamError
from carrag.services.ollama_http import OllamaAdapter, ollama_error

DEFAULT_OLLAMA_URL = "http://localhost:11434"
PREFIXES: dict[TextKind, str] = {"document": "search_document: ", "query": "search_query: "}


class OllamaEmbedder(OllamaAdapter):
    component = "embedder"
    _dimension: int | None = None

    @property
    def identity(self) -> str:
        identity = f"{self.provider}:{self.model}"
        if self.base_url != DEFAULT_OLLAMA_URL:
            identity += ":" + hashlib.sha256(self.base_url.encode()).hexdigest()[:8]
        return identity

    @property
    def uses_prefixes(self) -> bool:
        return "nomic" in self.model.lower()

    async def embed(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        inputs = [PREFIXES[kind] + text for text in texts] if self.uses_prefixes else list(texts)
        try:
            response = await self._client.post("/api/embed", json={"model": self.model, "input": inputs})
        except httpx.TransportError as exc:  # timeouts included
            raise self.unreachable(exc) from exc
        if response.status_code != 200:
            raise ollama_error("embedder", response)
        try:
            embeddings = response.json()["embeddings"]
        except (ValueError, KeyError) as exc:
            raise UpstreamError(f"Ollama /api/embed answered without embeddings: {response.text[:200]}") from exc
        if len(embeddings) != len(inputs):
            raise UpstreamError(f"Ollama returned {len(embeddings)} embeddings for {len(inputs)} inputs")
        vectors = l2_normalise(np.asarray(embeddings, dtype=np.float32))
        self._dimension = vectors.shape[1]
        return vectors

"""What the pipeline calls to embed, above every backend: batches of EMBED_BATCH_SIZE, an LRU cache by
(model identity, kind, text), and retries with backoff. A batch that still fails fails the whole call,
so the caller stores nothing rather than skipping chunks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from carrag.services.embedders.base import EmbeddingBackend, TextKind
from carrag.services.errors import DependencyUnavailable, NotRetryable, UpstreamError
from carrag.services.models import ComponentHealth, EmbeddingIdentity
from carrag.services.telemetry import NullTelemetry, Telemetry

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]


class EmbeddingCache:
    """A bounded LRU map from (kind, text) to a vector."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.hits = 0

    def get(self, kind: str, text: str) -> np.ndarray | None:
        key = (kind, text)
        vector = self._entries.get(key)
        if vector is None:
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return vector

    def put(self, kind: str, text: str, vector: np.ndarray) -> None:
        if self.max_entries <= 0:
            return
        key = (kind, text)
        self._entries[key] = vector
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(slots=True)
class EmbeddingStats:
    backend_calls: int = 0
    texts_embedded: int = 0
    seconds: float = 0.0


class EmbeddingService:
    def __init__(
        self,
        backend: EmbeddingBackend,
        *,
        batch_size: int = 32,
        cache_size: int = 10_000,
        retries: int = 3,
        backoff: float = 0.5,
        timeout: float = 120.0,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.backend = backend
        self.batch_size = batch_size
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.cache = EmbeddingCache(cache_size)
        self.stats = EmbeddingStats()
        self._dimension: int | None = getattr(backend, "dimension", None)
        self.telemetry = telemetry or NullTelemetry()

    @property
    def model(self) -> str:
        return self.backend.model

    @property
    def identity(self) -> str:
        return self.backend.identity

    async def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int((await self._embed_batch(["dimension probe"], "query")).shape[1])
        return self._dimension

    async def embedding_identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity(self.identity, await self.dimension())

    async def _embed_batch(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        delay = self.backoff
        for attempt in range(self.retries + 1):
            started = time.perf_counter()
            try:
                # asyncio.timeout, not wait_for: wait_for (3.11) runs the call in a task of its own, one
                # turn of the event loop later, so a query's embedding would start behind whatever that
                # turn runs first (in /search, the BM25 leg)
                async with asyncio.timeout(self.timeout):
                    vectors = await self.backend.embed(texts, kind)
            except (DependencyUnavailable, UpstreamError, TimeoutError) as exc:
                if attempt == self.retries or isinstance(exc, NotRetryable):
                    if isinstance(exc, TimeoutError):
                        raise DependencyUnavailable("embedder", f"no answer within {self.timeout:.0f}s") from exc
                    raise
                logger.warning(
                    "embedding batch failed, retrying",
                    extra={"attempt": attempt + 1, "texts": len(texts), "error": str(exc), "retry_in_s": delay},
                )
                await asyncio.sleep(delay)
                delay *= 2
                continue
            elapsed = time.perf_counter() - started
            self.stats.backend_calls += 1
            self.stats.texts_embedded += len(texts)
            self.stats.seconds += elapsed
            self.telemetry.texts_embedded(len(texts), elapsed)
            self._dimension = int(vectors.shape[1])
            return vectors
        raise AssertionError("unreachable")

    async def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        return await self._embed(texts, "document", progress)

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._embed([text], "query", None))[0]

    async def _embed(self, texts: Sequence[str], kind: TextKind, progress: ProgressCallback | None) -> np.ndarray:
        results: list[np.ndarray | None] = [self.cache.get(kind, text) for text in texts]
        missing: dict[str, list[int]] = {}
        for position, vector in enumerate(results):
            if vector is None:
                missing.setdefault(texts[position], []).append(position)
        pending = list(missing)
        done = len(texts) - sum(len(p) for p in missing.values())
        if progress:
            progress(done, len(texts))
        for offset in range(0, len(pending), self.batch_size):
            batch = pending[offset : offset + self.batch_size]
            vectors = await self._embed_batch(batch, kind)
            for text, vector in zip(batch, vectors, strict=True):
                self.cache.put(kind, text, vector)
                for position in missing[text]:
                    results[position] = vector
                done += len(missing[text])
            if progress:
                progress(done, len(texts))
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        filled = cast(list[np.ndarray], results)  # every position missing from the cache was embedded above
        return np.vstack(filled).astype(np.float32, copy=False)

    async def health(self) -> ComponentHealth:
        return await self.backend.health()

    async def aclose(self) -> None:
        await self.backend.aclose()

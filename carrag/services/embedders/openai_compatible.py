"""Hosted embeddings from any server speaking OpenAI's ``POST {base}/embeddings`` (``EMBEDDINGS_*``).

429, 5xx, timeouts and dropped connections are retried with backoff honouring ``Retry-After``; after
the last retry the error is `NotRetryable`, so `EmbeddingService` does not retry the retries. Other
4xx fail at once naming the setting to check. A server answering one vector per token (llama.cpp
without pooling) is an error, not a silently wrong embedding.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from carrag.services.embedders.base import TextKind, l2_normalise
from carrag.services.errors import NotRetryable
from carrag.services.models import ComponentHealth

logger = logging.getLogger(__name__)

DEFAULT_OPENAI_EMBEDDINGS_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
COMPONENT = "embedder"


class OpenAICompatibleEmbedder:
    provider = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        dimensions: int | None = None,
        max_inputs: int = 256,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_retry_wait: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.dimensions = dimensions
        self.max_inputs = max_inputs
        self.retries = retries
        self.backoff = backoff
        self.max_retry_wait = max_retry_wait
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
            transport=transport,
        )

    @property
    def identity(self) -> str:
        """``openai:<model>``, plus ``:<urlhash>`` for any endpoint but OpenAI's own: the same model
        name on two servers is not known to be the same model."""
        identity = f"{self.provider}:{self.model}"
        if self.base_url != DEFAULT_OPENAI_EMBEDDINGS_URL:
            identity += ":" + hashlib.sha256(self.base_url.encode()).hexdigest()[:8]
        return identity

    async def embed(self, texts: Sequence[str], kind: TextKind) -> np.ndarray:
        """Asymmetric prefixes are model-specific and unknown for hosted models: ``kind`` is not used."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.max_inputs):
            rows.extend(await self._embed_request(list(texts[start : start + self.max_inputs])))
        if not rows:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        return l2_normalise(np.asarray(rows, dtype=np.float32))

    async def _embed_request(self, inputs: list[str]) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": inputs, "encoding_format": "float"}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        response = await self._post_with_retries(payload)
        return self._vectors(response, len(inputs))

    async def _post_with_retries(self, payload: dict[str, Any]) -> httpx.Response:
        delay = self.backoff
        for attempt in range(self.retries + 1):
            last_attempt = attempt == self.retries
            try:
                response = await self._client.post("/embeddings", json=payload)
            except httpx.TimeoutException as exc:
                if last_attempt:
                    raise NotRetryable(COMPONENT, f"{self.base_url} timed out ({attempt + 1} attempts)") from exc
                wait = delay
            except httpx.TransportError as exc:
                if last_attempt:
                    raise NotRetryable(COMPONENT, f"cannot reach {self.base_url}: {exc}") from exc
                wait = delay
            else:
                if response.status_code == 200:
                    return response
                if response.status_code not in RETRY_STATUSES:
                    raise self._refusal(response)
                if last_attempt:
                    raise NotRetryable(
                        COMPONENT,
                        f"{self.base_url} answered {response.status_code} after {attempt + 1} attempts: "
                        f"{_message(response)}",
                    )
                wait = self._retry_after(response, delay)
            logger.warning(
                "embedding request failed, retrying",
                extra={"attempt": attempt + 1, "retry_in_s": wait, "base_url": self.base_url},
            )
            await asyncio.sleep(wait)
            delay *= 2
        raise AssertionError("unreachable")

    def _retry_after(self, response: httpx.Response, fallback: float) -> float:
        header = response.headers.get("retry-after", "")
        try:
            return min(max(float(header), 0.0), self.max_retry_wait)
        except ValueError:
            return fallback

    def _refusal(self, response: httpx.Response) -> NotRetryable:
        status, message = response.status_code, _message(response)
        if status in (401, 403):
            return NotRetryable(
                COMPONENT, f"{self.base_url} refused the key ({status}: {message}); check EMBEDDINGS_API_KEY"
            )
        if status == 404:
            return NotRetryable(
                COMPONENT,
                f"{self.base_url} has no embeddings model {self.model!r} or no /embeddings route "
                f"(404: {message}); check EMBEDDINGS_MODEL and EMBEDDINGS_BASE_URL",
            )
        return NotRetryable(COMPONENT, f"{self.base_url} rejected the embeddings request ({status}: {message})")

    def _vectors(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [item["embedding"] for item in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise NotRetryable(
                COMPONENT, f"{self.base_url} answered without embeddings: {response.text[:200]}"
            ) from exc
        if len(vectors) != expected:
            raise NotRetryable(COMPONENT, f"{self.base_url} returned {len(vectors)} embeddings for {expected} inputs")
        for vector in vectors:
            if not isinstance(vector, list) or not vector or not all(isinstance(x, int | float) for x in vector):
                detail = (
                    "one vector per token (llama.cpp without pooling: serve a model with a pooling type)"
                    if isinstance(vector, list) and vector and isinstance(vector[0], list)
                    else "an embedding that is not a list of numbers"
                )
                raise NotRetryable(COMPONENT, f"{self.base_url} returned {detail}")
        if len({len(vector) for vector in vectors}) != 1:
            raise NotRetryable(COMPONENT, f"{self.base_url} returned embeddings of different lengths")
        return vectors

    async def health(self) -> ComponentHealth:
        """``GET /models``: reachable, the key accepted, and the model listed (servers that list no
        models, or have no such route, are taken at their word until the first embedding)."""
        try:
            response = await self._client.get("/models", timeout=5.0)
        except httpx.HTTPError as exc:
            return ComponentHealth(COMPONENT, "unavailable", self.provider, self.model, f"{self.base_url}: {exc}")
        if response.status_code in (401, 403):
            return ComponentHealth(
                COMPONENT, "unavailable", self.provider, self.model, "key refused: check EMBEDDINGS_API_KEY"
            )
        if response.status_code == 200:
            try:
                listed = {item.get("id") for item in response.json().get("data") or []}
            except (ValueError, AttributeError):
                listed = set()
            if listed and self.model not in listed:
                return ComponentHealth(
                    COMPONENT,
                    "unavailable",
                    self.provider,
                    self.model,
                    f"{self.base_url} does not offer {self.model!r}: check EMBEDDINGS_MODEL",
                )
        return ComponentHealth(COMPONENT, "ok", self.provider, self.model, self.base_url)

    async def aclose(self) -> None:
        await self._client.aclose()


def _message(response: httpx.Response) -> str:
    """OpenAI's ``{"error": {"message"}}``, FastAPI's ``{"detail"}``, or the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if body.get("detail"):
            return str(body["detail"])[:300]
    return response.text[:300]

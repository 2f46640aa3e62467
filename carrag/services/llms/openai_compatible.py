"""Any server speaking the OpenAI chat-completions API (vLLM, llama.cpp server, LM Studio, OpenAI):
``POST {base}/chat/completions`` with ``stream: true`` answers Server-Sent Events whose
``choices[0].delta.content`` are text deltas, ending with ``data: [DONE]``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import httpx

from carrag.services.errors import DependencyUnavailable, UpstreamError
from carrag.services.models import ChatMessage, ComponentHealth


class OpenAICompatibleLLM:
    provider = "openai"
    capable = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        payload = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        try:
            async with self._client.stream("POST", "/chat/completions", json=payload) as response:
                if response.status_code != 200:
                    body = (await response.aread()).decode(errors="replace")[:500]
                    if response.status_code >= 500 or response.status_code in (401, 403, 404):
                        raise DependencyUnavailable("llm", f"{self.base_url} answered {response.status_code}: {body}")
                    raise UpstreamError(f"LLM server answered {response.status_code}: {body}")
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        event = json.loads(data)
                    except ValueError as exc:
                        raise UpstreamError(f"LLM server sent invalid JSON: {data[:200]}") from exc
                    if "error" in event:
                        raise UpstreamError(f"LLM server: {event['error']}")
                    for choice in event.get("choices") or []:
                        delta = (choice.get("delta") or {}).get("content") or ""
                        if delta:
                            yield delta
        except httpx.TimeoutException as exc:
            raise DependencyUnavailable("llm", f"{self.base_url} timed out") from exc
        except httpx.TransportError as exc:
            raise DependencyUnavailable("llm", f"cannot reach {self.base_url}: {exc}") from exc

    async def health(self) -> ComponentHealth:
        try:
            response = await self._client.get("/models", timeout=5.0)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            return ComponentHealth("llm", "unavailable", "openai-compatible", self.model, f"{self.base_url}: {exc}")
        return ComponentHealth("llm", "ok", "openai-compatible", self.model, self.base_url)

    async def aclose(self) -> None:
        await self._client.aclose()

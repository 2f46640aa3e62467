"""Ollama chat over HTTP: ``POST /api/chat`` with ``stream: true`` answers one JSON object per line,
each carrying a ``message.content`` delta; the last has ``done: true``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import httpx

from carrag.services.errors import UpstreamError
from carrag.services.models import ChatMessage
from carrag.services.ollama_http import OllamaAdapter, ollama_error


class OllamaLLM(OllamaAdapter):
    component = "llm"
    capable = True

    async def stream(
        self, messages: Sequence[ChatMessage], *, max_tokens: int, temperature: float
    ) -> AsyncIterator[str]:
        payload = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            "options": {"temperature": temperature, "num_predict": max_tokens},
        }
        try:
            async with self._client.stream("POST", "/api/chat", json=payload) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise ollama_error("llm", response)
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    try:
                        event = json.loads(line)
                    except ValueError as exc:
                        raise UpstreamError(f"Ollama sent a line that is not JSON: {line[:200]}") from exc
                    if "error" in event:
                        raise UpstreamError(f"Ollama: {event['error']}")
                    delta = (event.get("message") or {}).get("content") or ""
                    if delta:
                        yield delta
                    if event.get("done"):
                        return
        except httpx.TransportError as exc:  # timeouts included
            raise self.unreachable(exc) from exc

"""What the Ollama adapters (embedder and LLM) share: turning an error response into a clear error."""

from __future__ import annotations

import httpx

from services.errors import DependencyUnavailable, UpstreamError


def ollama_error(component: str, response: httpx.Response) -> Exception:
    """Ollama answers ``{"error": "..."}`` with a 4xx/5xx status; surface its message."""
    try:
        message = response.json().get("error") or response.text
    except ValueError:
        message = response.text
    message = str(message)[:500]
    if response.status_code == 404 and "not found" in message:
        return DependencyUnavailable(component, f"Ollama: {message}")
    if response.status_code >= 500:
        return DependencyUnavailable(component, f"Ollama error {response.status_code}: {message}")
    return UpstreamError(f"Ollama error {response.status_code}: {message}")

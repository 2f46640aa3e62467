"""What the Ollama adapters (embedder and LLM) share: the client, clear errors from error responses and
unreachable servers, and the health check (server reachable, model pulled)."""

from __future__ import annotations

import httpx

from carrag.services.errors import DependencyUnavailable, UpstreamError
from carrag.services.models import ComponentHealth


class OllamaAdapter:
    provider = "ollama"
    component = ""  # "embedder" or "llm", in errors and health

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._client = httpx.AsyncClient(
            base_url=self.base_url, timeout=httpx.Timeout(timeout, connect=10.0), transport=transport
        )

    def unreachable(self, exc: httpx.TransportError) -> DependencyUnavailable:
        if isinstance(exc, httpx.TimeoutException):
            return DependencyUnavailable(self.component, f"Ollama at {self.base_url} timed out")
        return DependencyUnavailable(self.component, f"cannot reach Ollama at {self.base_url}: {exc}")

    async def health(self) -> ComponentHealth:
        return await ollama_health(self._client, self.component, self.model)

    async def aclose(self) -> None:
        await self._client.aclose()


async def ollama_health(client: httpx.AsyncClient, component: str, model: str) -> ComponentHealth:
    base_url = str(client.base_url).rstrip("/")
    try:
        response = await client.get("/api/tags", timeout=5.0)
        response.raise_for_status()
        names = {m.get("name", "") for m in response.json().get("models", [])}
    except (httpx.HTTPError, ValueError) as exc:
        return ComponentHealth(component, "unavailable", "ollama", model, f"{base_url}: {exc}")
    if not any(name == model or name.startswith(model + ":") for name in names):
        return ComponentHealth(component, "unavailable", "ollama", model, f"model not pulled: `ollama pull {model}`")
    return ComponentHealth(component, "ok", "ollama", model, base_url)


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

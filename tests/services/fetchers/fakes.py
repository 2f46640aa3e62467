"""Test doubles for the fetcher: a table-driven resolver and transports that refuse or record."""

from __future__ import annotations

import httpx

from carrag.services.fetchers.address_policy import Resolver


class NoConnections(httpx.AsyncBaseTransport):
    """A transport for tests that must not reach the network: any request fails the test."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts.append(str(request.url))
        raise AssertionError(f"the fetcher tried to connect to {request.url}")


class RecordingTransport(httpx.AsyncHTTPTransport):
    """The real transport, noting the URL (so the IP address) each connection went to."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.targets.append(str(request.url))
        return await super().handle_async_request(request)


class FakeResolver:
    """Answers from a table; a list of answers per host is used one answer per call (rebinding)."""

    def __init__(self, table: dict[str, list[str] | list[list[str]]], fallback: Resolver | None = None) -> None:
        self.table = table
        self.fallback = fallback
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        answers = self.table.get(host)
        if answers is None and self.fallback is not None:
            return await self.fallback(host, port)
        if answers is None:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        if answers and isinstance(answers[0], list):
            return answers.pop(0) if len(answers) > 1 else answers[0]  # type: ignore[return-value]
        return answers  # type: ignore[return-value]

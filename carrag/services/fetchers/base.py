"""The fetcher port: get a URL's body for URL ingestion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(slots=True)
class FetchedPage:
    url: str  # as requested
    final_url: str  # after redirects
    content_type: str  # media type without parameters, lower-case
    charset: str | None
    body: bytes

    def text(self) -> str:
        from carrag.services.parsers.decoding import decode_declared

        return decode_declared(self.body, self.charset)[0]


class Fetcher(Protocol):
    async def fetch(self, url: str) -> FetchedPage:
        """Raises FetchRefused (not allowed), FetchFailed (remote error) or PayloadTooLarge."""

    async def aclose(self) -> None: ...

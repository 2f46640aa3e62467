"""The fetcher port: get a URL's body for URL ingestion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# Documents fetched by URL: the media type a server sends for each format whose parser needs a file
# extension (web pages, text and PDF have their own branches in the ingestion pipeline). Kept here, not in
# `parsers`, so the fetcher does not import every parser library.
MEDIA_TYPE_EXTENSIONS = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/epub+zip": ".epub",
    "application/vnd.oasis.opendocument.text": ".odt",
    "application/rtf": ".rtf",
    "text/rtf": ".rtf",
    "message/rfc822": ".eml",
}


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

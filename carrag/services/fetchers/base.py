"""The fetcher port: get a URL's body for URL ingestion (and for a site crawl, `carrag/services/sync/crawl.py`)."""

from __future__ import annotations

from collections.abc import Callable
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
    status: int = 200  # 304: not modified since the validators sent (`FetchOptions`); the body is empty
    etag: str | None = None  # the validators the server sent, for the next conditional fetch
    last_modified: str | None = None

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    def text(self) -> str:
        from carrag.services.parsers.decoding import decode_declared

        return decode_declared(self.body, self.charset)[0]


@dataclass(frozen=True, slots=True)
class FetchOptions:
    """How a crawl fetches; the defaults are a plain URL ingest's fetch."""

    etag: str | None = None  # sent as If-None-Match: an unchanged page answers 304
    last_modified: str | None = None  # sent as If-Modified-Since
    follow: Callable[[str], bool] | None = None  # a redirect to a URL this refuses is not followed (FetchRefused)
    media_types: frozenset[str] | None = None  # accepted instead of the ingestible types (robots.txt, sitemaps)


class Fetcher(Protocol):
    async def fetch(self, url: str, options: FetchOptions | None = None) -> FetchedPage:
        """Raises FetchRefused (not allowed), FetchFailed (remote error; ``status`` when the server
        answered) or PayloadTooLarge."""

    async def aclose(self) -> None: ...

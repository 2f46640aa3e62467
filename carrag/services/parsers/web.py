"""HTML page → article text: trafilatura first, BeautifulSoup as the fallback (seed 001 step 2).

Fetching is not done here; `carrag/services/fetchers/` gets the bytes, this module only extracts.
"""

from __future__ import annotations

from datetime import UTC, datetime

from carrag.services.errors import NoExtractableText
from carrag.services.models import ParsedDocument

NOISE_TAGS = ("script", "style", "nav", "footer", "header", "noscript", "template")


def page_title(html: str) -> str | None:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    if soup.title and soup.title.string:
        return soup.title.string.strip() or None
    return None


def fallback_text(html: str) -> str:
    """All visible text once the obvious non-content elements are removed."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(NOISE_TAGS):
        tag.decompose()
    return soup.get_text(separator="\n", strip=True)


def extract_main_text(html: str, url: str | None = None) -> str:
    import trafilatura

    text = trafilatura.extract(html, url=url, include_tables=True, include_comments=False)
    if text and text.strip():
        return text
    return fallback_text(html)


def parse_web_page(html: str, url: str) -> ParsedDocument:
    text = extract_main_text(html, url)
    if not text.strip():
        raise NoExtractableText(f"{url} contains no extractable text.")
    title = page_title(html)
    return ParsedDocument(
        text=text,
        filename=url,
        source_type="web",
        metadata={
            "url": url,
            "title": title,
            "extracted_at": datetime.now(UTC).isoformat(),
        },
        title=title,
    )

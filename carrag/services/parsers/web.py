"""A fetched HTML page → the Markdown of its content, by the same extraction as an uploaded HTML file, so
a page ingested by URL and uploaded give the same text.
"""

from __future__ import annotations

from datetime import UTC, datetime

from carrag.services.errors import NoExtractableText
from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.html_markdown import html_document


def parse_web_page(html: str, url: str, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    parsed = html_document(html, url, "web", budget)
    if not parsed.text.strip():
        raise NoExtractableText(f"{url} contains no extractable text.")
    parsed.metadata |= {"url": url, "extracted_at": datetime.now(UTC).isoformat()}
    return parsed

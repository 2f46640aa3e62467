"""HTML file → Markdown (seed 000: "HTML → Markdown conversion, scripts/styles removed").

An uploaded HTML file is converted whole with markdownify — headings, lists, tables and links keep
their structure, so the `markdown` chunking strategy can use the headings. Web pages fetched by
URL go through `web.py` instead, which extracts the main article and drops site navigation.
markdownify scored best against the docling reference conversions (see docs/architecture.md,
"Formats").

The character encoding comes from a byte-order mark or ``<meta charset>``; without either, UTF-8
is tried, then Windows-1252, and only then statistical detection. Hidden elements (``hidden``,
``display: none``) are dropped, and tables used for page layout are unwrapped into blocks.
Images become their alt text (their URLs, often ``data:`` blobs, are noise for search), link
titles are dropped, and the ``<head>`` is not converted (its ``<title>`` becomes the document
title). A document nested too deeply for the recursive converter falls back to its plain text.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.optional import import_optional
from carrag.services.parsers.text import looks_binary

REMOVED_TAGS = ("script", "style", "noscript", "template", "head")
TABLE_PARTS = ("thead", "tbody", "tfoot", "tr", "th", "td", "caption")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_TRAILING_SPACES = re.compile(r"[ \t]+$", re.MULTILINE)  # markdownify's "  " hard line breaks
_EXCESS_BLANK_LINES = re.compile(r"\n{3,}")
_EMPTY_TABLE_ROW = re.compile(r"^\|(?:[ \t]*\|)+\n", re.MULTILINE)
_ORPHAN_TABLE_RULE = re.compile(r"(^|\n\n)\|(?: *-+ *\|)+ *(?:\n|$)")
# Tried in order when the file has no byte-order mark and declares no charset: UTF-8, then the
# Windows-1252 fallback browsers use (before statistical detection, which confuses the
# Windows-125x code pages).
FALLBACK_ENCODINGS = ["utf-8", "windows-1252"]
_LINK_SCHEMES_DROPPED = ("data:", "javascript:")


def _converter_class():
    markdownify: Any = import_optional("markdownify", package="markdownify", extension=".html")

    class Converter(markdownify.MarkdownConverter):
        def convert_img(self, el, text, parent_tags):
            return el.attrs.get("alt", None) or ""

        def convert_a(self, el, text, parent_tags):
            href = (el.get("href") or "").strip()
            if href.lower().startswith(_LINK_SCHEMES_DROPPED):
                del el["href"]
            if el.get("title") is not None:
                del el["title"]
            return super().convert_a(el, text, parent_tags)

    return Converter


def remove_hidden(soup) -> None:
    """Drop elements marked ``hidden`` or styled ``display: none`` (one pass; no per-tag searches,
    which would be quadratic on deeply nested pages)."""
    hidden_ids: set[int] = set()
    outermost: list = []
    for tag in soup.find_all(True):
        if id(tag.parent) in hidden_ids:
            hidden_ids.add(id(tag))
        elif tag.has_attr("hidden") or _HIDDEN_STYLE.search(tag.get("style") or ""):
            hidden_ids.add(id(tag))
            outermost.append(tag)
    for tag in outermost:
        tag.decompose()


def unwrap_layout_tables(soup) -> None:
    """Tables used for page layout (ones holding other tables, or a single column) become plain
    blocks; as Markdown tables they would flatten whole pages into one cell."""
    owner: dict[int, object] = {}  # id(tag) -> the nearest enclosing <table>
    parts: dict[int, list] = {}  # id(table) -> its own rows/cells (not those of nested tables)
    holds_table: set[int] = set()
    tables = []
    for tag in soup.find_all(True):
        parent = tag.parent
        enclosing = parent if parent is not None and parent.name == "table" else owner.get(id(parent))
        if enclosing is not None:
            owner[id(tag)] = enclosing
        if tag.name == "table":
            tables.append(tag)
            parts[id(tag)] = []
            if enclosing is not None:
                holds_table.add(id(enclosing))
        elif tag.name in TABLE_PARTS and enclosing is not None:
            parts[id(enclosing)].append(tag)
    for table in tables:
        own = parts[id(table)]
        cells_per_row: dict[int, int] = {}
        for part in own:
            if part.name in ("td", "th") and part.parent is not None and part.parent.name == "tr":
                cells_per_row[id(part.parent)] = cells_per_row.get(id(part.parent), 0) + 1
        single_column = all(count <= 1 for count in cells_per_row.values())
        if single_column or id(table) in holds_table:
            for part in own:
                part.name = "div"
            table.name = "div"


def tidy_markdown(markdown: str) -> str:
    markdown = _TRAILING_SPACES.sub("", markdown)
    markdown = _EMPTY_TABLE_ROW.sub("", markdown)
    markdown = _ORPHAN_TABLE_RULE.sub(r"\1", markdown)
    return _EXCESS_BLANK_LINES.sub("\n\n", markdown).strip()


def html_to_markdown(soup) -> str:
    converter = _converter_class()(heading_style="ATX", bullets="-")
    try:
        markdown = converter.convert_soup(soup)
    except RecursionError:
        markdown = soup.get_text("\n\n", strip=True)
    return tidy_markdown(markdown)


def parse_html(data: bytes, filename: str) -> ParsedDocument:
    bs4 = import_optional("bs4", package="beautifulsoup4", extension=".html")
    import_optional("lxml", package="lxml", extension=".html")
    warnings.filterwarnings("ignore", category=bs4.XMLParsedAsHTMLWarning)  # XHTML is parsed as HTML on purpose
    decoded = bs4.UnicodeDammit(data, user_encodings=FALLBACK_ENCODINGS, is_html=True)
    if decoded.unicode_markup is None or looks_binary(decoded.unicode_markup):
        raise InvalidInput(f"{filename} looks like binary data, not HTML.")
    soup = bs4.BeautifulSoup(decoded.unicode_markup, "lxml")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) or None if title_tag else None
    for tag in soup(REMOVED_TAGS):
        tag.decompose()
    remove_hidden(soup)
    unwrap_layout_tables(soup)
    text = html_to_markdown(soup)
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="html",
        metadata={"title": title, "encoding": decoded.original_encoding, "line_count": len(text.splitlines())},
        title=title,
    )

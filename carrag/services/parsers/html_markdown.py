"""HTML → Markdown of the page's content, for uploaded files and fetched pages alike: site chrome removed
by structure (`html_chrome.py`), then markdownify (best against docling's reference conversions), with
link targets, citation markers, hidden elements and image URLs left out (noise for search).

The page is bounded before it is parsed: MAX_MARKUP_BYTES (the tree takes about ten times the page),
MAX_HTML_ELEMENTS, and MAX_HTML_ATTRIBUTES on long tags (libxml2 compares each attribute with all
before it). A document nested deeper than `MAX_NESTING_DEPTH` falls back to its plain text, so the
recursive extractor and converter never reach a RecursionError.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from itertools import islice
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget, too_large
from carrag.services.parsers.optional import import_optional
from carrag.services.parsers.text import first_markdown_h1, looks_binary

# Never text: scripts, styles, the head, and embedded media (their Markdown would be URLs)
REMOVED_TAGS = (
    *("script", "style", "noscript", "template", "head"),
    *("video", "audio", "iframe", "object", "embed", "svg", "canvas", "map"),
)
TABLE_PARTS = ("thead", "tbody", "tfoot", "tr", "th", "td", "caption")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_TRAILING_SPACES = re.compile(r"[ \t]+$", re.MULTILINE)  # markdownify's "  " hard line breaks
_EXCESS_BLANK_LINES = re.compile(r"\n{3,}")
_EMPTY_TABLE_ROW = re.compile(r"^\|(?:[ \t]*\|)+\n", re.MULTILINE)
MAX_NESTING_DEPTH = 200  # markdownify needs ~2.5 Python frames per level; real pages stay under ~60
_ORPHAN_TABLE_RULE = re.compile(r"(^|\n\n)\|(?: *-+ *\|)+ *(?:\n|$)")
# Tried in order when the file has no byte-order mark and declares no charset: UTF-8, then the
# Windows-1252 fallback browsers use (before statistical detection, which confuses the
# Windows-125x code pages).
FALLBACK_ENCODINGS = ["utf-8", "windows-1252"]
_CITATION_MARKER = re.compile(r"\[\s*(?:\d+|[a-z]|note \d+|citation needed)\s*\]", re.IGNORECASE)
_ELEMENT = re.compile(r"<[A-Za-z]")
_LONG_TAG = re.compile(r"<[A-Za-z][^>]{1024,}>")  # only a long tag can hold many attributes
_ATTRIBUTE = re.compile(r"""\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?""")


def _more_than(matches: Iterator[object], limit: int) -> bool:
    """Whether there are more than ``limit`` matches (the rest are never looked for)."""
    return next(islice(matches, limit, None), None) is not None


def check_markup(markup: str, filename: str, budget: ParseBudget) -> None:
    """Refuse (413) a page larger than the markup budget, or with more elements, or an element with
    more attributes, than the budget."""
    if len(markup) > budget.max_markup_bytes:
        raise too_large(
            filename, f"holds {len(markup):,} characters of HTML", budget.max_markup_bytes, "MAX_MARKUP_BYTES"
        )
    if _more_than(_ELEMENT.finditer(markup), budget.max_html_elements):
        raise too_large(
            filename,
            f"has more than {budget.max_html_elements:,} elements",
            budget.max_html_elements,
            "MAX_HTML_ELEMENTS",
        )
    for tag in _LONG_TAG.finditer(markup):
        if _more_than(_ATTRIBUTE.finditer(markup, tag.start(), tag.end()), budget.max_html_attributes):
            raise too_large(
                filename,
                f"has an element with more than {budget.max_html_attributes:,} attributes",
                budget.max_html_attributes,
                "MAX_HTML_ATTRIBUTES",
            )


def _converter_class():
    markdownify: Any = import_optional("markdownify", package="markdownify", extension=".html")

    class Converter(markdownify.MarkdownConverter):
        def convert_img(self, el, text, parent_tags):
            return el.attrs.get("alt", None) or ""

        def convert_a(self, el, text, parent_tags):
            for attribute in ("href", "title"):  # the link text stays, its target does not
                if el.get(attribute) is not None:
                    del el[attribute]
            return super().convert_a(el, text, parent_tags)

        def convert_sup(self, el, text, parent_tags):
            return "" if _CITATION_MARKER.fullmatch(text.strip()) else super().convert_sup(el, text, parent_tags)

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
    """Tables used for page layout (a single column, or holding a data table) become plain blocks; as
    Markdown tables they would flatten whole pages into one cell. Inner tables are judged first, so a
    data table whose cell merely wraps a one-cell table stays a table."""
    owner: dict[int, object] = {}  # id(tag) -> the nearest enclosing <table>
    parts: dict[int, list] = {}  # id(table) -> its own rows/cells (not those of nested tables)
    inner: dict[int, list] = {}  # id(table) -> the tables directly inside it
    tables = []
    for tag in soup.find_all(True):
        parent = tag.parent
        enclosing = parent if parent is not None and parent.name == "table" else owner.get(id(parent))
        if enclosing is not None:
            owner[id(tag)] = enclosing
        if tag.name == "table":
            tables.append(tag)
            parts[id(tag)] = []
            inner[id(tag)] = []
            if enclosing is not None:
                inner[id(enclosing)].append(tag)
        elif tag.name in TABLE_PARTS and enclosing is not None:
            parts[id(enclosing)].append(tag)
    data_tables: set[int] = set()
    for table in reversed(tables):  # inner tables before the tables holding them
        own = parts[id(table)]
        cells_per_row: dict[int, int] = {}
        for part in own:
            if part.name in ("td", "th") and part.parent is not None and part.parent.name == "tr":
                cells_per_row[id(part.parent)] = cells_per_row.get(id(part.parent), 0) + 1
        single_column = all(count <= 1 for count in cells_per_row.values())
        if single_column or any(id(nested) in data_tables for nested in inner[id(table)]):
            for part in own:
                part.name = "div"
            table.name = "div"
        else:
            data_tables.add(id(table))


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


def html_fragment_markdown(markup: str) -> str:
    """A fragment of HTML (a table inside a Markdown file) as Markdown, by the same converter."""
    return html_to_markdown(_soup(markup)).strip()


def nested_deeper_than(soup, limit: int) -> bool:
    """Whether any element lies more than ``limit`` levels down (walked without recursion)."""
    stack = [(soup, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in getattr(node, "contents", ()) if hasattr(child, "contents"))
    return False


def _soup(markup: str):
    bs4 = import_optional("bs4", package="beautifulsoup4", extension=".html")
    import_optional("lxml", package="lxml", extension=".html")
    warnings.filterwarnings("ignore", category=bs4.XMLParsedAsHTMLWarning)  # XHTML is parsed as HTML on purpose
    return bs4.BeautifulSoup(markup, "lxml")


def clean_page(soup) -> None:
    """Drop what is never content (scripts, styles, the head, hidden elements) and unwrap layout tables."""
    for tag in soup(REMOVED_TAGS):
        tag.decompose()
    remove_hidden(soup)
    unwrap_layout_tables(soup)


def html_document(
    markup: str, filename: str, source_type: str, budget: ParseBudget = DEFAULT_BUDGET, *, site_chrome: bool = True
) -> ParsedDocument:
    """Markup (already decoded) → the Markdown of its content; ``site_chrome=False`` for markup that is
    all content (an e-book chapter, whose table of contents is the book's own)."""
    check_markup(markup, filename, budget)
    soup = _soup(markup)
    title_tag = soup.find("title")
    page_title = title_tag.get_text(" ", strip=True) or None if title_tag else None
    clean_page(soup)
    from carrag.services.parsers.html_chrome import remove_chrome  # imports bs4, found by `_soup`

    chrome_removed_share = remove_chrome(soup) if site_chrome else 0.0
    if nested_deeper_than(soup, MAX_NESTING_DEPTH):
        text = tidy_markdown(soup.get_text("\n\n", strip=True))
    else:
        text = html_to_markdown(soup)
    title = page_title or first_markdown_h1(text)
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type=source_type,
        metadata={
            "title": title,
            "line_count": len(text.splitlines()),
            "chrome_removed_share": chrome_removed_share,
            "markup": "markdown",
        },
        title=title,
    )


def parse_html(
    data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET, site_chrome: bool = True
) -> ParsedDocument:
    bs4 = import_optional("bs4", package="beautifulsoup4", extension=".html")
    decoded = bs4.UnicodeDammit(data, user_encodings=FALLBACK_ENCODINGS, is_html=True)
    if decoded.unicode_markup is None or looks_binary(decoded.unicode_markup):
        raise InvalidInput(f"{filename} looks like binary data, not HTML.")
    parsed = html_document(decoded.unicode_markup, filename, "html", budget, site_chrome=site_chrome)
    parsed.metadata["encoding"] = decoded.original_encoding
    return parsed

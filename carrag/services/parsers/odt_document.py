"""ODT → Markdown with odfpy, in document order like .docx: headings, paragraphs, nested lists and tables
(repeated cells expanded). Tables of contents, headers, footers, notes and comments are not read.
"""

from __future__ import annotations

import re
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.archive import open_office_archive
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.markdown_table import markdown_table
from carrag.services.parsers.optional import import_optional

TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
TABLE_NS = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
DRAW_NS = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
# Containers whose children are read in place.
TRANSPARENT = {(TEXT_NS, "section"), (DRAW_NS, "frame"), (DRAW_NS, "text-box"), (TEXT_NS, "soft-page-break")}
SKIPPED = {(TEXT_NS, "table-of-content"), (TEXT_NS, "sequence-decls"), (OFFICE_NS, "forms")}
_WHITESPACE = re.compile(r"\s+")
_MAX_REPEAT = 64  # "table:number-columns-repeated" can say 16384 for one trailing empty cell
_MAX_DEPTH = 50


class _Reader:
    def __init__(self, teletype: Any) -> None:
        self.teletype = teletype
        self.headings = self.paragraphs = self.tables = 0

    def text_of(self, element: Any) -> str:
        return _WHITESPACE.sub(" ", self.teletype.extractText(element)).strip()

    def blocks(self, element: Any, depth: int = 0) -> list[str]:
        out: list[str] = []
        if depth > _MAX_DEPTH:
            return out
        for child in element.childNodes:
            name = getattr(child, "qname", None)
            if name is None or name in SKIPPED:
                continue
            if name == (TEXT_NS, "h"):
                text = self.text_of(child)
                if text:
                    level = _int(child.getAttribute("outlinelevel"), 1)
                    out.append("#" * min(max(level, 1), 6) + " " + text)
                    self.headings += 1
            elif name == (TEXT_NS, "p"):
                text = self.text_of(child)
                if text:
                    out.append(text)
                    self.paragraphs += 1
                out.extend(self.blocks(child, depth + 1) if _has_frames(child) else [])
            elif name == (TEXT_NS, "list"):
                lines = self.list_lines(child, 0, depth + 1)
                if lines:
                    out.append("\n".join(lines))
            elif name == (TABLE_NS, "table"):
                table = self.table(child)
                if table:
                    out.append(table)
                    self.tables += 1
            elif name in TRANSPARENT:
                out.extend(self.blocks(child, depth + 1))
        return out

    def list_lines(self, element: Any, level: int, depth: int) -> list[str]:
        lines: list[str] = []
        if depth > _MAX_DEPTH:
            return lines
        for item in element.childNodes:
            if getattr(item, "qname", None) not in ((TEXT_NS, "list-item"), (TEXT_NS, "list-header")):
                continue
            for part in item.childNodes:
                name = getattr(part, "qname", None)
                if name == (TEXT_NS, "list"):
                    lines.extend(self.list_lines(part, level + 1, depth + 1))
                elif name in ((TEXT_NS, "p"), (TEXT_NS, "h")):
                    text = self.text_of(part)
                    if text:
                        lines.append("  " * level + "- " + text)
        return lines

    def table(self, element: Any) -> str:
        rows: list[list[str]] = []
        for row in _descendants(element, (TABLE_NS, "table-row")):
            values: list[str] = []
            for cell in row.childNodes:
                if getattr(cell, "qname", None) not in ((TABLE_NS, "table-cell"), (TABLE_NS, "covered-table-cell")):
                    continue
                text = self.text_of(cell) if cell.qname[1] == "table-cell" else ""
                repeat = min(_int(cell.getAttribute("numbercolumnsrepeated"), 1), _MAX_REPEAT)
                values.extend([text] * repeat)
            while values and not values[-1]:
                values.pop()
            if values:
                rows.append(values)
        return markdown_table(rows)


def _descendants(element: Any, name: tuple[str, str]) -> list[Any]:
    """Rows of this table (inside header-rows / row-groups too), not those of nested tables."""
    found: list[Any] = []
    for child in element.childNodes:
        qname = getattr(child, "qname", None)
        if qname == name:
            found.append(child)
        elif qname is not None and qname != (TABLE_NS, "table"):
            found.extend(_descendants(child, name))
    return found


def _has_frames(paragraph: Any) -> bool:
    return any(getattr(child, "qname", None) == (DRAW_NS, "frame") for child in paragraph.childNodes)


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def parse_odt(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    opendocument = import_optional("odf.opendocument", package="odfpy", extension=".odt")
    teletype = import_optional("odf.teletype", package="odfpy", extension=".odt")
    document = open_office_archive(data, filename, ".odt", opendocument.load, budget)
    reader = _Reader(teletype)
    try:
        bodies = [child for child in document.body.childNodes if getattr(child, "qname", None) == (OFFICE_NS, "text")]
        blocks = [block for body in bodies for block in reader.blocks(body)]
        title = _document_title(document) or next((block[2:] for block in blocks if block.startswith("# ")), None)
    except Exception as exc:
        raise InvalidInput(f"{filename}: the document body cannot be read ({exc}).") from exc
    return ParsedDocument(
        text="\n\n".join(blocks),
        filename=filename,
        source_type="odt",
        metadata={
            "heading_count": reader.headings,
            "paragraph_count": reader.paragraphs,
            "table_count": reader.tables,
            "title": title,
        },
        title=title,
    )


def _document_title(document: Any) -> str | None:
    from odf.dc import Title

    titles = document.meta.getElementsByType(Title) if document.meta is not None else []
    text = "".join(str(node) for title in titles[:1] for node in title.childNodes).strip()
    return text or None

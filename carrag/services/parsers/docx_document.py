"""DOCX → text with python-docx in body order: paragraphs as blocks, tables as Markdown rows where they
stand, heading styles as ATX headings and list paragraphs as ``- `` items (so Markdown chunking gets
section paths). Headers, footers, footnotes, comments and text boxes are not read.
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

_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


class StyleNames:
    """Paragraph style names by style id, read once. python-docx's ``paragraph.style`` searches the
    styles part on every call (for an unstyled paragraph, every style), milliseconds per paragraph:
    a large document took minutes."""

    def __init__(self, document: Any) -> None:
        self.by_id: dict[str, str] = {}
        self.default = ""
        try:
            for style in document.styles:
                if style.style_id is not None:
                    self.by_id[style.style_id] = style.name or ""
            paragraph_default = document.styles.element.default_for(1)  # WD_STYLE_TYPE.PARAGRAPH
            if paragraph_default is not None:
                self.default = self.by_id.get(paragraph_default.styleId or "", "")
        except (KeyError, AttributeError, ValueError):  # a damaged styles part: no style names
            pass

    def of(self, paragraph: Any) -> str:
        style_id = paragraph._p.style
        return self.default if style_id is None else self.by_id.get(style_id, "")


def paragraph_block(paragraph: Any, styles: StyleNames) -> str:
    text = paragraph.text.strip()
    if not text:
        return ""
    style = styles.of(paragraph)
    heading = _HEADING_STYLE.match(style)
    if heading:
        return "#" * min(int(heading.group(1)), 6) + " " + _WHITESPACE.sub(" ", text)
    if style.lower() == "title":
        return "# " + _WHITESPACE.sub(" ", text)
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    if style.lower().startswith("list") or numbered:
        return "- " + text
    return text


def _cell_words(cell: Any) -> str:
    parts: list[str] = []
    for item in cell.iter_inner_content():
        if hasattr(item, "rows"):  # a table nested in the cell: its cells, in order
            parts.extend(_cell_words(inner) for row in item.rows for inner in _unique_cells(row))
        else:
            parts.append(item.text)
    return " ".join(parts)


def cell_text(cell: Any) -> str:
    """A cell's paragraphs (and any nested table's cells) on one line."""
    return _WHITESPACE.sub(" ", _cell_words(cell)).strip()


def _unique_cells(row: Any) -> list[Any]:
    cells, seen = [], set()
    for cell in row.cells:
        if id(cell._tc) not in seen:
            seen.add(id(cell._tc))
            cells.append(cell)
    return cells


def _rows_by_grid(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    above: list[Any] = []  # the <w:tc> element in each column of the previous row
    for row in table.rows:
        values: list[str] = []
        elements: list[Any] = []
        for column, cell in enumerate(row.cells):
            element = cell._tc
            repeated = (elements and elements[-1] is element) or (column < len(above) and above[column] is element)
            values.append("" if repeated else cell_text(cell))
            elements.append(element)
        above = elements
        rows.append(values)
    return rows


def _rows_by_xml(table: Any) -> list[list[str]]:
    """Cell texts straight from the XML, for tables whose column grid python-docx cannot resolve."""
    from docx.oxml.ns import qn

    text_tag = qn("w:t")
    return [
        [_WHITESPACE.sub(" ", "".join(node.text or "" for node in tc.iter(text_tag))).strip() for tc in tr.tc_lst]
        for tr in table._tbl.tr_lst
    ]


def table_block(table: Any) -> str:
    try:
        rows = _rows_by_grid(table)
    except (ValueError, IndexError, KeyError):  # e.g. "no `tc` element at grid_offset=1"
        rows = _rows_by_xml(table)
    return markdown_table([values for values in rows if any(values)])


def parse_docx(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    docx = import_optional("docx", package="python-docx", extension=".docx")
    document = open_office_archive(data, filename, ".docx", docx.Document, budget)
    blocks: list[str] = []
    paragraphs = tables = 0
    styles = StyleNames(document)
    try:
        for item in document.iter_inner_content():
            if hasattr(item, "rows"):
                block = table_block(item)
                tables += bool(block)
            else:
                block = paragraph_block(item, styles)
                paragraphs += bool(block)
            if block:
                blocks.append(block)
    except InvalidInput:
        raise
    except Exception as exc:
        raise InvalidInput(f"{filename}: the document body cannot be read ({exc}).") from exc
    title = (document.core_properties.title or "").strip() or None
    return ParsedDocument(
        text="\n\n".join(blocks),
        filename=filename,
        source_type="docx",
        metadata={"paragraph_count": paragraphs, "table_count": tables, "title": title},
        title=title,
    )

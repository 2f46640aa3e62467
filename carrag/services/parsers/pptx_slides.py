"""PPTX → Markdown with python-pptx: each slide under ``## <title>`` (``## Slide N`` without one), its
shapes in stored order, then its notes. Each slide's span is recorded like a PDF page, so a chunk's
``pages`` are slide numbers. Charts, SmartArt and masters are not read.
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
from carrag.services.parsers.pdf import join_pages

_WHITESPACE = re.compile(r"[ \t\r\f\v]+")
IMAGE_FILE_NAME = re.compile(r"\.(png|jpe?g|gif|bmp|svg|tiff?|emf|wmf|webp)$", re.IGNORECASE)
# Titles that presentation programs write into the core properties by themselves.
PLACEHOLDER_TITLES = {"powerpoint presentation", "presentation", "untitled presentation", "title slide"}


def _line(text: str) -> str:
    return _WHITESPACE.sub(" ", text.replace("\x0b", " ")).strip()


def text_frame_block(frame: Any, *, as_list: bool) -> str:
    """A text frame's paragraphs; in body placeholders (``as_list``) each paragraph is a list item
    indented by its outline level."""
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        text = _line(paragraph.text)
        if not text:
            continue
        level = paragraph.level or 0
        if as_list or level > 0:
            lines.append("  " * level + "- " + text)
        else:
            lines.append(text)
    return "\n".join(lines)


def table_markdown(table: Any) -> str:
    rows = [[_line(cell.text) for cell in row.cells] for row in table.rows]
    return markdown_table([row for row in rows if any(row)])


def _placeholder_kind(shape: Any) -> str:
    """The placeholder type's name (e.g. ``BODY (2)``); ``""`` for a shape that is none or an unknown one."""
    if not shape.is_placeholder:
        return ""
    try:
        return str(shape.placeholder_format.type)
    except (ValueError, AttributeError):
        return ""


def _is_body_placeholder(shape: Any) -> bool:
    kind = _placeholder_kind(shape)
    return "BODY" in kind or "OBJECT" in kind


def _is_furniture(shape: Any) -> bool:
    """Date, footer and slide-number placeholders repeat on every slide and say nothing."""
    kind = _placeholder_kind(shape)
    return any(name in kind for name in ("DATE", "FOOTER", "SLIDE_NUMBER", "HEADER"))


def shape_blocks(shape: Any, depth: int = 0) -> list[str]:
    if depth > 20 or _is_furniture(shape):
        return []
    if getattr(shape, "shapes", None) is not None and not getattr(shape, "has_text_frame", False):  # a group
        return [block for member in shape.shapes for block in shape_blocks(member, depth + 1)]
    if getattr(shape, "has_table", False) and shape.has_table:
        block = table_markdown(shape.table)
        return [block] if block else []
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        block = text_frame_block(shape.text_frame, as_list=_is_body_placeholder(shape))
        return [block] if block else []
    description = _line(shape._element.xpath("string(.//p:cNvPr/@descr)")) if hasattr(shape, "_element") else ""
    if not description or IMAGE_FILE_NAME.search(description):  # a picture's file name says nothing
        return []
    return [description]


def slide_text(slide: Any, number: int) -> tuple[str, str | None, bool]:
    """The slide as Markdown, its title, and whether it holds any text of its own."""
    title_shape = slide.shapes.title
    title_lines = [_line(line) for line in (title_shape.text_frame.text if title_shape is not None else "").split("\n")]
    title_lines = [line for line in title_lines if line]
    heading = title_lines[0] if title_lines else f"Slide {number}"
    blocks = [f"## {heading}"]
    if title_lines[1:]:
        blocks.append("\n".join(title_lines[1:]))
    for shape in slide.shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        blocks.extend(shape_blocks(shape))
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = "\n".join(_line(p.text) for p in slide.notes_slide.notes_text_frame.paragraphs if _line(p.text))
        if notes:
            blocks.append("Notes: " + notes)
    title = title_lines[0] if title_lines else None
    return "\n\n".join(blocks), title, bool(title_lines) or len(blocks) > 1


def parse_pptx(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    pptx = import_optional("pptx", package="python-pptx", extension=".pptx")
    presentation = open_office_archive(data, filename, ".pptx", pptx.Presentation, budget)
    slides: list[tuple[int, str]] = []
    notes = 0
    has_text = False
    slide_titles: list[str] = []
    try:
        for number, slide in enumerate(presentation.slides, start=1):
            text, slide_title, slide_has_text = slide_text(slide, number)
            has_text = has_text or slide_has_text
            slide_titles.extend([slide_title] if slide_title else [])
            notes += "\n\nNotes: " in text
            slides.append((number, text))
        title = (presentation.core_properties.title or "").strip() or None
    except Exception as exc:
        raise InvalidInput(f"{filename}: a slide cannot be read ({exc}).") from exc
    text, spans = join_pages(slides)  # each slide's span recorded like a PDF page's
    if title is None or title.lower() in PLACEHOLDER_TITLES or re.fullmatch(r"slide \d+", title.lower()):
        title = slide_titles[0] if slide_titles else None
    return ParsedDocument(
        text=text if has_text else "",
        filename=filename,
        source_type="pptx",
        metadata={"slide_count": len(spans), "slides_with_notes": notes, "title": title},
        page_spans=spans if has_text else [],
        title=title,
    )

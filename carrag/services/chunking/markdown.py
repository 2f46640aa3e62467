"""Markdown chunking by ATX headers (CommonMark; never inside fenced code; setext headers are not read).

Every chunk lies in one section and carries its header path in `Chunk.section` (``Install > Linux``), as
the reader sees it (inline Markdown rendered). A header with no text before a deeper header stays with
that subsection. Sections longer than ``size`` are split by the recursive splitter, overlapping only
within the section.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt

from carrag.services.chunking.recursive import atomise, fit_to_headers
from carrag.services.chunking.spans import Span, merge_atoms, spans_to_chunks, trim_span
from carrag.services.chunking.tables import PipeTables
from carrag.services.models import Chunk, PageSpan

ATX_HEADER = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
PATH_SEPARATOR = " > "
_INLINE_MARKUP = frozenset("*_`[]!\\<&~")


@lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False})


def plain_text(inline: str) -> str:
    """Inline Markdown (a heading's text) as a reader sees it: emphasis, code spans, links and
    escapes reduced to their words."""
    if _INLINE_MARKUP.isdisjoint(inline):
        return inline
    tokens = _inline_parser().parseInline(inline)
    parts: list[str] = []
    for token in tokens[0].children or ():
        if token.type in ("text", "code_inline", "image"):  # an image's content is its alt text
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts).strip()


@dataclass(slots=True)
class Header:
    start: int  # offset of the header line
    body_start: int  # offset just after the header line
    level: int
    title: str


def find_headers(text: str) -> list[Header]:
    headers: list[Header] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    position = 0
    while position < len(text):
        newline = text.find("\n", position)
        line_end = len(text) if newline == -1 else newline + 1
        line = text[position:line_end].rstrip("\r\n")
        if fence is not None:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) <= 3
                and stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
            ):
                fence = None
        elif opening := FENCE_OPEN.match(line):
            marker, info = opening.groups()
            if not (marker[0] == "`" and "`" in info):  # a backtick fence's info string has no backticks
                fence = marker
        elif header := ATX_HEADER.match(line):
            title = plain_text(CLOSING_HASHES.sub("", (header.group(2) or "").strip()).strip())
            headers.append(Header(position, line_end, len(header.group(1)), title))
        position = line_end
    return headers


def header_paths(headers: Sequence[Header]) -> list[str | None]:
    """``Parent > Child`` for each header, from the levels of the headers before it."""
    stack: list[Header] = []
    paths: list[str | None] = []
    for header in headers:
        while stack and stack[-1].level >= header.level:
            stack.pop()
        stack.append(header)
        path = PATH_SEPARATOR.join(item.title for item in stack if item.title)
        paths.append(path or None)
    return paths


def section_spans(text: str, headers: Sequence[Header] | None = None) -> list[tuple[Span, str | None]]:
    """``((start, end), header path)`` of each section, header-only parents joined to their child."""
    headers = find_headers(text) if headers is None else headers
    paths = header_paths(headers)
    sections: list[tuple[Span, str | None]] = []
    first = headers[0].start if headers else len(text)
    if text[:first].strip():
        sections.append(((0, first), None))
    pending_start: int | None = None
    for index, header in enumerate(headers):
        end = headers[index + 1].start if index + 1 < len(headers) else len(text)
        start = header.start if pending_start is None else pending_start
        has_body = bool(text[header.body_start : end].strip())
        next_is_child = index + 1 < len(headers) and headers[index + 1].level > header.level
        if not has_body and next_is_child:
            pending_start = start
            continue
        pending_start = None
        sections.append(((start, end), paths[index]))
    return sections


def chunk_markdown(text: str, size: int, overlap: int, page_spans: Sequence[PageSpan] = ()) -> list[Chunk]:
    headers = find_headers(text)
    paths = header_paths(headers)
    header_starts = [header.start for header in headers]

    def path_before(offset: int) -> str | None:
        """The path of the last header that starts before ``offset``."""
        count = bisect.bisect_left(header_starts, offset)
        return paths[count - 1] if count else None

    tables = PipeTables(text, size)
    spans: list[Span] = []
    for (start, end), _ in section_spans(text, headers):
        atoms = fit_to_headers(text, atomise(text, start, end, size), size, tables)
        spans.extend(merge_atoms(text, atoms, size, overlap, tables))
    # A section split into pieces gives each piece the same path, except that pieces holding only
    # the header-only parents joined to it carry those parents' paths.
    sections = [path_before(trim_span(text, *span)[1]) for span in spans]
    return spans_to_chunks(text, spans, page_spans, sections, tables)

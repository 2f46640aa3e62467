"""Character spans → `Chunk` objects, shared by every strategy: ``text[char_start:char_end] == chunk.text``
by construction, except that a chunk starting inside a Markdown table repeats its header (`tables.py`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from carrag.services.chunking.tables import PipeTables
from carrag.services.models import Chunk, PageSpan

Span = tuple[int, int]


def trim_span(text: str, start: int, end: int) -> Span:
    """Shrink a span so it neither starts nor ends with whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def word_boundary_at_or_after(text: str, position: int, limit: int) -> int:
    """The first position in ``[position, limit]`` that starts a word, else ``position``.

    Used to begin an overlap at a whole word instead of mid-word.
    """
    if position <= 0:
        return 0
    if text[position - 1].isspace() and not text[position].isspace():
        return position
    index = position
    while index < limit and not text[index].isspace():
        index += 1
    while index < limit and text[index].isspace():
        index += 1
    return index if index < limit else position


def pages_for_span(page_spans: Sequence[PageSpan], starts: Sequence[int], start: int, end: int) -> list[int]:
    """Page numbers whose text intersects ``[start, end)``. ``starts`` is ``[p.start for p in page_spans]``."""
    if not page_spans:
        return []
    index = max(bisect.bisect_right(starts, start) - 1, 0)
    pages: list[int] = []
    while index < len(page_spans) and page_spans[index].start < end:
        span = page_spans[index]
        if span.end > start:
            pages.append(span.page)
        index += 1
    return pages


def spans_to_chunks(
    text: str,
    spans: Iterable[Span],
    page_spans: Sequence[PageSpan] = (),
    sections: Sequence[str | None] | None = None,
    tables: PipeTables | None = None,
) -> list[Chunk]:
    """Trim each span, drop whitespace-only ones and ones the previous chunk already contains,
    number the rest and attach their pages (and, with ``tables``, the header of a table they start in)."""
    starts = [p.start for p in page_spans]
    chunks: list[Chunk] = []
    for position, (raw_start, raw_end) in enumerate(spans):
        start, end = trim_span(text, raw_start, raw_end)
        if start >= end:
            continue
        if chunks and chunks[-1].char_start <= start and end <= chunks[-1].char_end:
            continue
        chunks.append(
            Chunk(
                chunk_index=len(chunks),
                text=(tables.header_at(start) if tables is not None else "") + text[start:end],
                char_start=start,
                char_end=end,
                pages=pages_for_span(page_spans, starts, start, end),
                section=sections[position] if sections is not None else None,
            )
        )
    return chunks


def merge_atoms(
    text: str, atoms: Sequence[Span], size: int, overlap: int, tables: PipeTables | None = None
) -> list[Span]:
    """Greedily merge contiguous atoms (each at most ``size`` long) into spans of at most ``size``.

    When a span is emitted, the next one starts up to ``overlap`` characters before its end,
    at a word boundary where possible, but never so early that the next atom no longer fits.
    With ``tables``, a span starting in a table body counts the header it repeats (each atom must
    fit beside it, `recursive.fit_to_headers`), and its overlap starts at a row.
    """
    spans: list[Span] = []
    if not atoms:
        return spans

    def length(start: int, end: int) -> int:
        return end - start + (len(tables.header_at(start)) if tables is not None else 0)

    current_start, current_end = atoms[0]
    for atom_start, atom_end in atoms[1:]:
        if length(current_start, atom_end) <= size:
            current_end = atom_end
            continue
        spans.append((current_start, current_end))
        next_start = atom_start
        if overlap > 0:
            earliest = max(current_end - overlap, current_start, atom_end - size)
            if earliest < atom_start:
                next_start = word_boundary_at_or_after(text, earliest, atom_start)
                if tables is not None:
                    next_start = tables.row_start(next_start, atom_start)
                if length(next_start, atom_end) > size:
                    next_start = atom_start
        current_start, current_end = next_start, atom_end
    spans.append((current_start, current_end))
    return spans

"""Recursive character chunking (the default): split on the coarsest separator that occurs, recurse into
longer pieces with the next, then merge back up to the limit with overlap; separators stay attached,
so the pieces tile the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.chunking.spans import Span, merge_atoms, spans_to_chunks, trim_span
from carrag.services.chunking.tables import PipeTables
from carrag.services.models import Chunk, PageSpan

SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ")


def _split_on(text: str, start: int, end: int, separator: str) -> list[Span]:
    pieces: list[Span] = []
    position = start
    while True:
        found = text.find(separator, position, end)
        if found == -1:
            break
        cut = found + len(separator)
        if cut >= end:
            break
        pieces.append((position, cut))
        position = cut
    pieces.append((position, end))
    return pieces


def atomise(text: str, start: int, end: int, size: int, separators: Sequence[str] = SEPARATORS) -> list[Span]:
    """Spans of at most ``size`` characters that tile ``text[start:end]`` exactly."""
    if end - start <= size:
        return [(start, end)]
    for level, separator in enumerate(separators):
        pieces = _split_on(text, start, end, separator)
        if len(pieces) == 1:
            continue
        atoms: list[Span] = []
        for piece_start, piece_end in pieces:
            if piece_end - piece_start <= size:
                atoms.append((piece_start, piece_end))
            else:
                atoms.extend(atomise(text, piece_start, piece_end, size, separators[level + 1 :]))
        return atoms
    return [(position, min(position + size, end)) for position in range(start, end, size)]


def fit_to_headers(text: str, atoms: Sequence[Span], size: int, tables: PipeTables) -> list[Span]:
    """``atoms`` with those that start in a table body split until each fits beside the table's
    header, which the chunk starting there repeats."""
    fitted: list[Span] = []
    pending = list(reversed(atoms))
    while pending:
        start, end = pending.pop()
        room = size - len(tables.header_at(start))
        if end - start <= room:
            fitted.append((start, end))
        else:
            pending.extend(reversed(atomise(text, start, end, room)))
    return fitted


def chunk_recursive(text: str, size: int, overlap: int, page_spans: Sequence[PageSpan] = ()) -> list[Chunk]:
    tables = PipeTables(text, size)
    atoms = fit_to_headers(text, atomise(text, 0, len(text), size), size, tables)
    return spans_to_chunks(text, merge_atoms(text, atoms, size, overlap, tables), page_spans, tables=tables)


def units_between(text: str, breaks: re.Pattern[str]) -> list[Span]:
    """The spans between matches of ``breaks`` (paragraphs, sentences), trimmed; whitespace-only ones left out."""
    spans: list[Span] = []
    position = 0
    for match in breaks.finditer(text):
        spans.append(trim_span(text, position, match.start()))
        position = match.end()
    spans.append(trim_span(text, position, len(text)))
    return [(start, end) for start, end in spans if start < end]


def merge_units(text: str, units: Sequence[Span], size: int, overlap: int) -> tuple[list[Span], PipeTables]:
    """Units merged up to ``size`` with overlap, a unit longer than ``size`` split by `atomise` first."""
    atoms: list[Span] = []
    for start, end in units:
        atoms.extend(atomise(text, start, end, size) if end - start > size else [(start, end)])
    tables = PipeTables(text, size)
    return merge_atoms(text, fit_to_headers(text, atoms, size, tables), size, overlap, tables), tables

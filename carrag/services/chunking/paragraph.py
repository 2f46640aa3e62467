"""Paragraph chunking: paragraphs (between blank lines) merged up to ``size`` with overlap; a longer
paragraph is split by the recursive splitter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.chunking.recursive import atomise, fit_to_headers
from carrag.services.chunking.spans import Span, merge_atoms, spans_to_chunks, trim_span
from carrag.services.chunking.tables import PipeTables
from carrag.services.models import Chunk, PageSpan

PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")


def paragraph_spans(text: str) -> list[Span]:
    """Each paragraph's span, trimmed of surrounding whitespace; whitespace-only ones left out."""
    spans: list[Span] = []
    position = 0
    for match in PARAGRAPH_BREAK.finditer(text):
        spans.append(trim_span(text, position, match.start()))
        position = match.end()
    spans.append(trim_span(text, position, len(text)))
    return [(start, end) for start, end in spans if start < end]


def chunk_paragraph(text: str, size: int, overlap: int, page_spans: Sequence[PageSpan] = ()) -> list[Chunk]:
    atoms: list[Span] = []
    for start, end in paragraph_spans(text):
        atoms.extend(atomise(text, start, end, size) if end - start > size else [(start, end)])
    tables = PipeTables(text, size)
    spans = merge_atoms(text, fit_to_headers(text, atoms, size, tables), size, overlap, tables)
    return spans_to_chunks(text, spans, page_spans, tables=tables)

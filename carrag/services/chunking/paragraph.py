"""Paragraph chunking: paragraphs (between blank lines) merged up to ``size`` with overlap; a longer
paragraph is split by the recursive splitter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.chunking.recursive import merge_units, units_between
from carrag.services.chunking.spans import Span, spans_to_chunks
from carrag.services.models import Chunk, PageSpan

PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")


def paragraph_spans(text: str) -> list[Span]:
    return units_between(text, PARAGRAPH_BREAK)


def chunk_paragraph(text: str, size: int, overlap: int, page_spans: Sequence[PageSpan] = ()) -> list[Chunk]:
    spans, tables = merge_units(text, paragraph_spans(text), size, overlap)
    return spans_to_chunks(text, spans, page_spans, tables=tables)

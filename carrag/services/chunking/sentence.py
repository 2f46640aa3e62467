"""Sentence chunking: sentences merged up to ``size`` with overlap. A trailing chunk shorter than
``min_chunk_size`` joins the previous one, which may then exceed ``size`` by less than ``min_chunk_size``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.chunking.recursive import merge_units, units_between
from carrag.services.chunking.spans import Span, spans_to_chunks, trim_span
from carrag.services.models import Chunk, PageSpan

SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def sentence_spans(text: str) -> list[Span]:
    return units_between(text, SENTENCE_BREAK)


def merge_short_tail(text: str, spans: list[Span], size: int, min_chunk_size: int) -> list[Span]:
    if len(spans) < 2:
        return spans
    last_start, last_end = trim_span(text, *spans[-1])
    previous_start, previous_end = trim_span(text, *spans[-2])
    merged = (previous_start, max(previous_end, last_end))
    if last_end - last_start < min_chunk_size and merged[1] - merged[0] < size + min_chunk_size:
        return [*spans[:-2], merged]
    return spans


def chunk_sentence(
    text: str, size: int, overlap: int, min_chunk_size: int = 0, page_spans: Sequence[PageSpan] = ()
) -> list[Chunk]:
    merged, tables = merge_units(text, sentence_spans(text), size, overlap)
    spans = merge_short_tail(text, merged, size, min_chunk_size)
    return spans_to_chunks(text, spans, page_spans, tables=tables)

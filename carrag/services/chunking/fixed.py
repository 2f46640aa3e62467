"""Fixed-size character windows with overlap (seed 000 ``strategy: fixed``).

Window *k* starts at ``k × (size − overlap)`` and is ``size`` characters long; the last window is
the first one that reaches the end of the text. Windows cut through words and sentences — that is
the point of the strategy (predictable sizes for logs, code, tables). Windows that are only
whitespace are skipped and the others are trimmed of surrounding whitespace, so a chunk may be
shorter than ``size``.
"""

from __future__ import annotations

from collections.abc import Sequence

from carrag.services.chunking.spans import Span, spans_to_chunks
from carrag.services.models import Chunk, PageSpan


def fixed_windows(length: int, size: int, overlap: int) -> list[Span]:
    step = size - overlap
    windows: list[Span] = []
    start = 0
    while start < length:
        end = min(start + size, length)
        windows.append((start, end))
        if end == length:
            break
        start += step
    return windows


def chunk_fixed(text: str, size: int, overlap: int, page_spans: Sequence[PageSpan] = ()) -> list[Chunk]:
    return spans_to_chunks(text, fixed_windows(len(text), size, overlap), page_spans)

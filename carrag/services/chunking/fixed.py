"""Fixed-size character windows with overlap; whitespace-only windows are skipped and the rest trimmed."""

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

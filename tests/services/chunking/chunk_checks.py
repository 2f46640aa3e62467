"""Invariants every chunking strategy keeps, shared by the strategy tests."""

from __future__ import annotations

from collections.abc import Sequence

from carrag.services.models import Chunk, PageSpan


def assert_chunk_invariants(text: str, chunks: Sequence[Chunk], max_size: int) -> None:
    """Exact offsets, consecutive indexes, trimmed non-empty chunks in order, nothing left out; a
    chunk's text is its span, after the header of the table it starts in, if any."""
    for position, chunk in enumerate(chunks):
        assert chunk.chunk_index == position
        body = text[chunk.char_start : chunk.char_end]
        header = chunk.text[: len(chunk.text) - len(body)]
        assert header + body == chunk.text
        assert not header or (header.count("\n") == 2 and header in text + "\n"), header
        assert chunk.text and chunk.text.strip() == chunk.text
        assert len(chunk.text) <= max_size, (len(chunk.text), max_size)
    starts = [chunk.char_start for chunk in chunks]
    assert starts == sorted(starts)
    covered = bytearray(len(text))
    for chunk in chunks:
        covered[chunk.char_start : chunk.char_end] = b"\x01" * (chunk.char_end - chunk.char_start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert missing == [], f"non-whitespace characters left out at {missing[:10]}"
    if text.strip():
        assert chunks
    else:
        assert not chunks


def assert_pages_follow_offsets(chunks: Sequence[Chunk], page_spans: Sequence[PageSpan]) -> None:
    for chunk in chunks:
        expected = [p.page for p in page_spans if p.start < chunk.char_end and p.end > chunk.char_start]
        assert chunk.pages == expected

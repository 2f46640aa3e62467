from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from carrag.services.chunking.recursive import chunk_recursive
from carrag.services.models import PageSpan

PROSE = (
    "Check the engine oil level every time you refuel. Use SAE 5W-30 oil.\n\n"
    "The oil filter is the FL-500S. Replace it at every oil change.\n"
    "Oil changes are due every 7,500 miles. " * 12
)


def assert_invariants(text: str, chunks, size: int) -> None:
    for position, chunk in enumerate(chunks):
        assert chunk.chunk_index == position
        assert text[chunk.char_start : chunk.char_end] == chunk.text
        assert len(chunk.text) <= size
        assert chunk.text.strip() == chunk.text and chunk.text
    covered = [False] * len(text)
    for chunk in chunks:
        for index in range(chunk.char_start, chunk.char_end):
            covered[index] = True
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert missing == [], f"non-whitespace characters left out at {missing[:10]}"
    starts = [chunk.char_start for chunk in chunks]
    assert starts == sorted(starts)


def test_short_text_is_one_chunk() -> None:
    chunks = chunk_recursive("Just one short paragraph.", 500, 100)
    assert [(c.text, c.char_start, c.char_end) for c in chunks] == [("Just one short paragraph.", 0, 25)]


def test_long_text_splits_with_overlap_at_word_boundaries() -> None:
    chunks = chunk_recursive(PROSE, 500, 100)
    assert len(chunks) > 2
    assert_invariants(PROSE, chunks, 500)
    for previous, current in zip(chunks, chunks[1:]):
        overlap = previous.char_end - current.char_start
        assert 0 < overlap <= 100, "consecutive chunks share up to CHUNK_OVERLAP characters"
        assert current.char_start == 0 or PROSE[current.char_start - 1].isspace()


def test_prefers_paragraph_boundaries() -> None:
    paragraphs = ["A" * 200 + ".", "B" * 200 + ".", "C" * 200 + "."]
    text = "\n\n".join(paragraphs)
    chunks = chunk_recursive(text, 450, 0)
    assert [c.text for c in chunks] == [paragraphs[0] + "\n\n" + paragraphs[1], paragraphs[2]]


def test_hard_split_when_no_separator() -> None:
    text = "x" * 1234
    chunks = chunk_recursive(text, 500, 100)
    assert_invariants(text, chunks, 500)
    assert all(len(c.text) <= 500 for c in chunks)


def test_zero_overlap_tiles_text() -> None:
    chunks = chunk_recursive(PROSE, 300, 0)
    assert_invariants(PROSE, chunks, 300)
    for previous, current in zip(chunks, chunks[1:]):
        assert current.char_start >= previous.char_end


def test_pages_follow_offsets() -> None:
    page_one, page_two = "First page text. " * 20, "Second page text. " * 20
    text = page_one.rstrip() + "\n\n" + page_two.rstrip()
    spans = [PageSpan(1, 0, len(page_one.rstrip())), PageSpan(2, len(page_one.rstrip()) + 2, len(text))]
    chunks = chunk_recursive(text, 200, 50, spans)
    assert chunks[0].pages == [1]
    assert chunks[-1].pages == [2]
    straddling = [c for c in chunks if c.char_start < spans[0].end < c.char_end]
    assert all(c.pages == [1, 2] for c in straddling)


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(["abc", "x", " ", ".", "\n", "\t", "\n\n", ". ", "é", "🙂", "word "]), max_size=800
    ).map("".join),
    size=st.integers(min_value=20, max_value=600),
    overlap_ratio=st.floats(min_value=0, max_value=0.9),
)
def test_invariants_hold_for_any_text(text: str, size: int, overlap_ratio: float) -> None:
    overlap = int(size * overlap_ratio)
    chunks = chunk_recursive(text, size, overlap)
    assert_invariants(text, chunks, size)
    if text.strip():
        assert chunks
    else:
        assert chunks == []


def test_real_pdf_text(manual_pdf: bytes) -> None:
    from carrag.services.parsers.pdf import parse_pdf

    parsed = parse_pdf(manual_pdf, "manual.pdf")
    chunks = chunk_recursive(parsed.text, 200, 50, parsed.page_spans)
    assert_invariants(parsed.text, chunks, 200)
    assert {page for chunk in chunks for page in chunk.pages} == {1, 3, 4}

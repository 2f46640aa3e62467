"""Property-based tests: every strategy keeps the shared invariants on any text, with PDF pages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from carrag.services.chunking import chunk_document
from carrag.services.errors import InvalidInput
from carrag.services.models import PageSpan, ParsedDocument
from carrag.services.vocabulary import ChunkingStrategy
from tests.services.chunking.chunk_checks import assert_chunk_invariants, assert_pages_follow_offsets

PIECES = [
    "abc",
    "x",
    " ",
    ".",
    "!",
    "?",
    "\n",
    "\t",
    "\n\n",
    "\n \n",
    ". ",
    "? ",
    "é",
    "🙂",
    "word ",
    "# ",
    "## Head\n",
    "```\n",
    "~~~\n",
    "#",
    "Sentence one. ",
    "\r\n",
]
texts = st.lists(st.sampled_from(PIECES), max_size=600).map("".join)


def paged(text: str, cuts: list[int]) -> list[PageSpan]:
    """Pages that tile the text at the given cut points (the PDF parser's spans never overlap)."""
    bounds = sorted({0, len(text), *(min(cut, len(text)) for cut in cuts)})
    return [
        PageSpan(page=index + 1, start=start, end=end) for index, (start, end) in enumerate(zip(bounds, bounds[1:]))
    ]


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
@settings(max_examples=150, deadline=None)
@given(
    text=texts,
    size=st.integers(min_value=10, max_value=400),
    overlap_ratio=st.floats(min_value=0, max_value=0.9),
    min_chunk_size=st.integers(min_value=0, max_value=150),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=5),
)
def test_invariants_hold_for_any_text(
    strategy: str, text: str, size: int, overlap_ratio: float, min_chunk_size: int, cuts: list[int]
) -> None:
    overlap = int(size * overlap_ratio)
    pages = paged(text, cuts)
    document = ParsedDocument(text=text, filename="x.txt", source_type="text", page_spans=pages)
    chunks = chunk_document(document, strategy, size, overlap, min_chunk_size)
    # only the sentence strategy may exceed the size: its merged tail, by less than MIN_CHUNK_SIZE
    slack = max(min_chunk_size - 1, 0) if strategy == "sentence" else 0
    assert_chunk_invariants(text, chunks, size + slack)
    if strategy == "sentence":
        assert all(len(chunk.text) <= size for chunk in chunks[:-1])
    assert_pages_follow_offsets(chunks, pages)
    assert (strategy == "markdown") or all(chunk.section is None for chunk in chunks)


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
def test_real_pdf_pages(strategy: str, manual_pdf: bytes) -> None:
    from carrag.services.parsers.pdf import parse_pdf

    parsed = parse_pdf(manual_pdf, "manual.pdf")
    chunks = chunk_document(parsed, strategy, 200, 40, 50)
    assert_chunk_invariants(parsed.text, chunks, 200 + 49)
    assert_pages_follow_offsets(chunks, parsed.page_spans)
    assert {page for chunk in chunks for page in chunk.pages} == {1, 3, 4}


def test_unknown_strategy_and_bad_overlap_are_invalid_input() -> None:
    document = ParsedDocument(text="Some text.", filename="a.txt", source_type="text")
    with pytest.raises(InvalidInput, match="'words'; choose one of recursive, fixed, paragraph, sentence, markdown"):
        chunk_document(document, "words", 100, 10)
    with pytest.raises(InvalidInput, match="smaller than chunk_size"):
        chunk_document(document, "fixed", 100, 100)

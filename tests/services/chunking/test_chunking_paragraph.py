from __future__ import annotations

from carrag.services.chunking.paragraph import chunk_paragraph, paragraph_spans
from tests.services.chunking.chunk_checks import assert_chunk_invariants


def paragraph(word: str, words: int) -> str:
    return " ".join([word] * words)


def test_blank_lines_separate_paragraphs_even_with_spaces_on_them() -> None:
    text = "First para\nstill first.\n\nSecond.\n  \t\nThird.\n\n\n\nFourth."
    assert [text[s:e] for s, e in paragraph_spans(text)] == ["First para\nstill first.", "Second.", "Third.", "Fourth."]


def test_small_paragraphs_merge_up_to_size() -> None:
    paragraphs = [paragraph("alpha", 15), paragraph("beta", 15), paragraph("gamma", 15)]  # 89, 74, 89 chars
    text = "\n\n".join(paragraphs)
    chunks = chunk_paragraph(text, 200, 0)
    assert [c.text for c in chunks] == [paragraphs[0] + "\n\n" + paragraphs[1], paragraphs[2]]


def test_the_next_chunk_carries_the_previous_tail_as_overlap() -> None:
    paragraphs = [paragraph(word, 15) for word in ("alpha", "beta", "gamma", "delta")]
    text = "\n\n".join(paragraphs)
    chunks = chunk_paragraph(text, 200, 40)
    assert_chunk_invariants(text, chunks, 200)
    # alpha+beta fill the first chunk; gamma and delta each need their own, after the carried tail
    assert [c.text.endswith(p) for c, p in zip(chunks, (paragraphs[1], paragraphs[2], paragraphs[3]))] == [True] * 3
    assert len(chunks) == 3
    for previous, current in zip(chunks, chunks[1:]):
        carried = text[current.char_start : previous.char_end]
        assert 0 < len(carried) <= 40 and previous.text.endswith(carried)
        assert text[current.char_start - 1] == " ", "the overlap starts at a word"


def test_oversized_paragraph_falls_back_to_recursive_splitting() -> None:
    long_paragraph = "This sentence is part of one very long paragraph. " * 30
    text = "Short intro.\n\n" + long_paragraph.strip() + "\n\nShort outro."
    chunks = chunk_paragraph(text, 300, 50)
    assert_chunk_invariants(text, chunks, 300)
    assert len(chunks) >= 6
    assert chunks[0].text.startswith("Short intro.") and chunks[-1].text.endswith("Short outro.")

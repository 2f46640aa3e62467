from __future__ import annotations

from carrag.services.chunking.fixed import chunk_fixed, fixed_windows
from tests.services.chunking.chunk_checks import assert_chunk_invariants

LETTERS = "abcdefghijklmnopqrstuvwxyz" * 4  # 104 characters, no whitespace


def test_window_positions_step_by_size_minus_overlap() -> None:
    chunks = chunk_fixed(LETTERS, 30, 10)
    assert [(c.char_start, c.char_end) for c in chunks] == [(0, 30), (20, 50), (40, 70), (60, 90), (80, 104)]
    assert [c.chunk_index for c in chunks] == [0, 1, 2, 3, 4]
    assert_chunk_invariants(LETTERS, chunks, 30)


def test_zero_overlap_tiles_the_text() -> None:
    assert fixed_windows(100, 25, 0) == [(0, 25), (25, 50), (50, 75), (75, 100)]


def test_stops_at_the_first_window_that_reaches_the_end() -> None:
    # a window starting at 80 would lie entirely inside the one before it
    assert fixed_windows(90, 50, 10) == [(0, 50), (40, 90)]
    assert fixed_windows(0, 50, 10) == []


def test_whitespace_windows_are_skipped_and_chunks_trimmed() -> None:
    text = "a" * 30 + " " * 60 + "\n" + "b" * 29
    chunks = chunk_fixed(text, 30, 0)
    assert [c.text for c in chunks] == ["a" * 30, "b" * 29]
    assert [c.chunk_index for c in chunks] == [0, 1]
    assert chunks[1].char_start == 91


def test_windows_cut_through_words() -> None:
    text = "The quick brown fox jumps over the lazy dog"
    chunks = chunk_fixed(text, 8, 2)
    assert [c.text for c in chunks] == ["The quic", "ick brow", "own fox", "x jumps", "s over t", "the laz", "azy dog"]

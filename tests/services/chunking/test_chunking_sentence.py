from __future__ import annotations

from carrag.services.chunking.sentence import chunk_sentence, sentence_spans
from tests.services.chunking.chunk_checks import assert_chunk_invariants

SENTENCES = [
    "The battery lasts about nine hundred charge cycles.",  # 51 characters each (±1)
    "Store it half charged when the bike is not in use.",
    "Charge it only with the supplied four amp charger.",
    "Keep the contacts dry and clean them once a month.",
]


def test_splits_after_terminal_punctuation_followed_by_whitespace() -> None:
    text = "Version 2.5 is out! Is it stable? Yes.It is.\nNew line here"
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Version 2.5 is out!",
        "Is it stable?",
        "Yes.It is.",
        "New line here",
    ]


def test_sentences_accumulate_up_to_size() -> None:
    text = " ".join(SENTENCES)
    chunks = chunk_sentence(text, 110, 0)
    assert [c.text for c in chunks] == [" ".join(SENTENCES[:2]), " ".join(SENTENCES[2:])]


def test_next_chunk_starts_with_the_previous_tail_at_a_word_boundary() -> None:
    text = " ".join(SENTENCES)
    chunks = chunk_sentence(text, 110, 30)
    assert_chunk_invariants(text, chunks, 110)
    for previous, current in zip(chunks, chunks[1:]):
        carried = text[current.char_start : previous.char_end]
        assert 0 < len(carried) <= 30 and previous.text.endswith(carried)
        assert text[current.char_start - 1] == " "


def test_short_trailing_chunk_is_merged_into_the_previous_one() -> None:
    text = " ".join(SENTENCES[:2]) + " Done."
    separate = chunk_sentence(text, 105, 0, min_chunk_size=0)
    assert [c.text for c in separate] == [" ".join(SENTENCES[:2]), "Done."]
    merged = chunk_sentence(text, 105, 0, min_chunk_size=20)
    assert [c.text for c in merged] == [text]
    assert 105 < len(merged[0].text) < 105 + 20, "exceeds size by less than min_chunk_size"


def test_trailing_chunk_long_enough_stays_separate() -> None:
    text = " ".join(SENTENCES[:3])
    chunks = chunk_sentence(text, 105, 0, min_chunk_size=20)
    assert [c.text for c in chunks] == [" ".join(SENTENCES[:2]), SENTENCES[2]]


def test_a_single_short_chunk_is_kept() -> None:
    assert [c.text for c in chunk_sentence("Tiny.", 100, 10, min_chunk_size=50)] == ["Tiny."]


def test_overlong_sentence_falls_back_to_recursive_splitting() -> None:
    text = "Intro sentence. " + "word " * 100 + "end. Outro sentence."
    chunks = chunk_sentence(text, 120, 20, min_chunk_size=10)
    assert_chunk_invariants(text, chunks, 120 + 9)
    assert len(chunks) >= 5

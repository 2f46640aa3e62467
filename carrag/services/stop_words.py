"""Word lists kept as data in `word_lists/`, one word per line.

English function words carry no signal for BM25 or for lexical evidence: one list for the SQLite BM25
leg (`stores/fts_query.py`) and the answer checks (`answers/evidence.py`). The tag filter
(`keyphrases.acceptable_tag`) also checks phrases against generic filler words, words of site chrome
and markup, and *lorem ipsum* vocabulary.
"""

from __future__ import annotations

from pathlib import Path

_WORD_LISTS = Path(__file__).with_name("word_lists")


def word_list(name: str) -> frozenset[str]:
    return frozenset((_WORD_LISTS / f"{name}.txt").read_text(encoding="utf-8").split())


ENGLISH_STOP_WORDS = word_list("english_stop_words")

"""Word lists kept as data in `word_lists/`, one entry per line.

English function words carry no signal for BM25 or for lexical evidence: one list for the SQLite BM25
leg (`stores/fts_query.py`) and the answer checks (`answers/evidence.py`). The tag filter
(`keyphrases.acceptable_tag`) also checks phrases against generic filler words, words of site chrome
and markup, and *lorem ipsum* vocabulary. The keyword tagger reads vehicle makes (`tagging.py`).
"""

from __future__ import annotations

from pathlib import Path

_WORD_LISTS = Path(__file__).with_name("word_lists")


def word_list(name: str) -> frozenset[str]:
    """The list's entries, one a line (an entry may hold spaces: "alfa romeo")."""
    lines = (_WORD_LISTS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip())


ENGLISH_STOP_WORDS = word_list("english_stop_words")

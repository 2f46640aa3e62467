"""`ids.normalised_text` (split and join, for speed) is the regular-expression form it replaced: the
two must never disagree, or every stored content hash would change (unchanged documents re-ingested,
copies no longer recognised) and `/search` would show or hide other copies."""

from __future__ import annotations

import random
import re
import sys
import unicodedata

from carrag.services.ids import normalised_text
from carrag.services.retrieval.distinct import distinct_by_text


def regular_expression_form(text: str) -> str:
    """What `normalised_text` was until 2026-11-27."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def test_every_whitespace_character_alone_and_in_runs() -> None:
    assert len(WHITESPACE) > 20  # the Unicode ones too (NBSP, ideographic space, line separator, ...)
    for space in WHITESPACE:
        for text in (space, f"a{space}b", f"{space}a{space}{space}b{space}", f"a {space}\n b"):
            assert normalised_text(text) == regular_expression_form(text), repr(text)


def test_compatibility_characters_and_random_text() -> None:
    # characters NFKC changes, some into spaces or into several characters (U+2003 em space, U+FB01 fi,
    # U+2474 parenthesised one, U+3000), and characters it leaves alone
    alphabet = (
        WHITESPACE + list("ab Z9.,-\u00e9\u0301\ufb01\u2474\u00bd\uff21\u2003\u3000\u00a0\u200b\ud7a3") + ["\ud800"]
    )
    rng = random.Random(12)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert normalised_text(text) == regular_expression_form(text), repr(text)
    assert normalised_text("") == regular_expression_form("") == ""


def test_copies_that_differ_in_whitespace_and_compatibility_forms_show_once() -> None:
    items = ["ﬁne  print\n", "fine print", "fine\u00a0print ", "Fine print", "fine prints"]
    assert unicodedata.normalize("NFKC", items[0]).startswith("fine")
    assert distinct_by_text(items, str) == ["ﬁne  print\n", "Fine print", "fine prints"]

"""PDF text hygiene: line-break hyphens joined, glyph garbage recognised.

**Hyphens.** Typeset text breaks words at line ends (``ef-\\nficient``), which splits them for
BM25 and the embedding. A letter, a hyphen (or soft hyphen) at the end of a line and a lower-case
letter on the next line are joined, unless the document itself writes the pair with a hyphen
(``well-known`` somewhere on one line) and never as one word: then only the line break goes.
A capital or a digit after the break (``IBM-\\nSupplied``, ``COVID-\\n19``) keeps hyphen and break.

**Garbage.** A font without a usable character map gives text such as ``èÜ•ÜáÜ§ê †°ê£Ü•î``:
valid Unicode, but not language. A span of text is garbage when, among its non-space characters,

- private-use, unassigned, replacement (U+FFFD) or control characters make up more than 10 %, or
- symbols (``° £ ± ∞``) and typographic marks (``• † ‡ § ¶``) wedged between two letters (``°ê£ë†£``)
  make up more than 10 % (at least three of them; quotes, apostrophes, brackets and middle dots
  between letters are normal in French, Korean or Arabic text), or
- of at least 20 Latin letters, more than 60 % carry diacritics (French or German text has under
  10 %, Vietnamese about 30 %).

The pipeline drops garbage spans; a page whose text is mostly garbage counts as a page without text
(so OCR reads it, when enabled).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MAX_BAD_SHARE = 0.10
MAX_WEDGED_SYMBOL_SHARE = 0.10
MIN_WEDGED_SYMBOLS = 3
_MARKS = frozenset("¡§¶†‡•‰¿")
MAX_DIACRITIC_SHARE = 0.60
MIN_LATIN_LETTERS = 20
MIN_JUDGED_CHARS = 12  # shorter spans carry too little evidence (unless mostly bad characters)

_BROKEN_WORD = re.compile(r"([^\W\d_]+)[-\u00ad][ \t]*\n[ \t]*([^\W\d_][\w]*)")
_HYPHENATED_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_WORD = re.compile(r"[^\W\d_]+")


def document_vocabulary(texts: Iterable[str]) -> tuple[set[str], set[str]]:
    """Lower-cased words, and hyphenated words written on one line, of the whole document."""
    words: set[str] = set()
    hyphenated: set[str] = set()
    for text in texts:
        words.update(word.lower() for word in _WORD.findall(text))
        hyphenated.update(word.lower() for word in _HYPHENATED_WORD.findall(text))
    return words, hyphenated


def join_hyphenated_breaks(text: str, vocabulary: tuple[set[str], set[str]]) -> tuple[str, int]:
    """``text`` with line-break hyphens joined (see the module docstring), and how many were joined."""
    words, hyphenated = vocabulary
    joined = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal joined
        head, tail = match.group(1), match.group(2)
        soft = "\u00ad" in match.group(0)
        if not soft and not tail[0].islower():
            return match.group(0)
        as_one = (head + tail).lower()
        with_hyphen = f"{head}-{tail}".lower()
        if not soft and with_hyphen in hyphenated and as_one not in words:
            return f"{head}-{tail}"
        joined += 1
        return head + tail

    return _BROKEN_WORD.sub(replace, text), joined


def _is_bad(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Co", "Cn", "Cs") or char == "\ufffd" or (category == "Cc" and char not in "\t\n\r\f")


def _is_symbol(char: str) -> bool:
    return not char.isascii() and (unicodedata.category(char) in ("Sm", "So", "Sc", "Sk") or char in _MARKS)


def is_garbage(text: str) -> bool:
    """True when ``text`` reads as unmapped glyphs rather than language (see the module docstring)."""
    chars = [char for char in text if not char.isspace()]
    if not chars:
        return False
    bad = sum(_is_bad(char) for char in chars)
    if bad / len(chars) > MAX_BAD_SHARE and (len(chars) >= MIN_JUDGED_CHARS or bad / len(chars) > 0.5):
        return True
    if len(chars) < MIN_JUDGED_CHARS:
        return False
    wedged = 0
    for before, char, after in zip(chars, chars[1:], chars[2:], strict=False):
        if before.isalpha() and after.isalpha() and _is_symbol(char):
            wedged += 1
    if wedged >= MIN_WEDGED_SYMBOLS and wedged / len(chars) > MAX_WEDGED_SYMBOL_SHARE:
        return True
    latin = [char for char in chars if char.isalpha() and "LATIN" in unicodedata.name(char, "")]
    if len(latin) >= MIN_LATIN_LETTERS:
        accented = sum(not char.isascii() for char in latin)
        if accented / len(latin) > MAX_DIACRITIC_SHARE:
            return True
    return False

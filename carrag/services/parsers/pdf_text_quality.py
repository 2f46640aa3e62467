"""PDF text hygiene: Unicode normalised, line-break hyphens joined, glyph garbage recognised.

**Normalisation.** LaTeX (and other typesetters) draw an accented letter as a letter plus a
*spacing* accent glyph, which text extraction returns as two characters (``E´en``, ``S¨orensson``),
and many fonts map ligatures to their presentation forms (``speciﬁed``). Both break word matching
for BM25 and the embedding. A spacing accent next to a letter is joined to it when Unicode has that
accented letter (the following letter first, as TeX draws the accent before its letter, then the
preceding one): ``Eén``, ``Sörensson``; an accent that fits neither stays (``X´ + u``). The grave
accent is also the ASCII backtick, so it is joined only inside a word (``Sediv`y``, not
```echo```). Then the text is NFKC-normalised (``ﬁ`` → ``fi``, full-width and superscript forms
to plain ones).

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

_LINE_BREAK_HYPHENS = "-\u00ad\u2010"  # hyphen-minus, soft hyphen, and groff's U+2010 (man pages)
_HYPHENATED_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # tab, newlines and form feed are fine
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_WEDGED = re.compile(r"(?<=[^\W\d_])[^\x00-\x7f](?=[^\W\d_])")  # a non-ASCII character between two letters
_ASCII_LETTER = re.compile(r"[A-Za-z]")

# Spacing accent → the combining mark it stands for.
SPACING_ACCENTS = {
    "\u00b4": "\u0301",  # ´ acute
    "\u0060": "\u0300",  # ` grave (also the backtick)
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02dc": "\u0303",  # ˜ tilde
    "\u00af": "\u0304",  # ¯ macron
    "\u02d8": "\u0306",  # ˘ breve
    "\u02d9": "\u0307",  # ˙ dot above
    "\u02da": "\u030a",  # ˚ ring above
    "\u02dd": "\u030b",  # ˝ double acute
    "\u02c7": "\u030c",  # ˇ caron
    "\u00b8": "\u0327",  # ¸ cedilla
    "\u02db": "\u0328",  # ˛ ogonek
}
_SPACING_ACCENT = re.compile(f"([^\\W\\d_]?)([{''.join(SPACING_ACCENTS)}])([^\\W\\d_]?)")


def _accented(letter: str, accent: str) -> str | None:
    """The one precomposed character for ``letter`` with ``accent``, if Unicode has it."""
    composed = unicodedata.normalize("NFC", letter + SPACING_ACCENTS[accent])
    return composed if len(composed) == 1 else None


_BELOW_ACCENTS = frozenset("\u00b8\u02db")  # TeX draws a cedilla or ogonek after its letter


def _compose(match: re.Match[str]) -> str:
    before, accent, after = match.groups()
    if accent == "`" and not (before and after):
        return match.group(0)
    onto_after = after and _accented(after, accent)
    onto_before = before and _accented(before, accent)
    if onto_before and (accent in _BELOW_ACCENTS or not onto_after):
        return onto_before + after
    if onto_after:
        return before + onto_after
    return match.group(0)


def normalise_text(text: str) -> str:
    """Spacing accents joined to their letters, then NFKC (see the module docstring)."""
    if text.isascii() and "`" not in text:
        return text
    return unicodedata.normalize("NFKC", _SPACING_ACCENT.sub(_compose, text))


def document_vocabulary(texts: Iterable[str]) -> tuple[str, set[str]]:
    """The whole document's text, lower-cased, and its hyphenated words written on one line."""
    whole = "\n".join(texts).lower()
    return whole, set(_HYPHENATED_WORD.findall(whole))


def join_hyphenated_breaks(
    text: str, vocabulary: tuple[str, set[str]], hyphens: str = _LINE_BREAK_HYPHENS
) -> tuple[str, int]:
    """``text`` with line-break hyphens joined (see the module docstring), and how many were joined;
    ``hyphens``: the characters that may end a line inside a word."""
    broken_word = re.compile(rf"([^\W\d_]+)[{re.escape(hyphens)}][ \t]*\n[ \t]*([^\W\d_][\w]*)")
    whole, hyphenated = vocabulary
    joined = 0

    def written_as_one(word: str) -> bool:  # asked only for pairs the document also hyphenates (rare)
        return re.search(rf"(?<![^\W\d_]){re.escape(word)}(?![^\W\d_])", whole) is not None

    def replace(match: re.Match[str]) -> str:
        nonlocal joined
        head, tail = match.group(1), match.group(2)
        soft = "\u00ad" in match.group(0)
        if not soft and not tail[0].islower():
            return match.group(0)
        as_one = (head + tail).lower()
        with_hyphen = f"{head}-{tail}".lower()
        if not soft and with_hyphen in hyphenated and not written_as_one(as_one):
            return f"{head}-{tail}"
        joined += 1
        return head + tail

    return broken_word.sub(replace, text), joined


def _is_bad(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Co", "Cn", "Cs") or char == "\ufffd" or (category == "Cc" and char not in "\t\n\r\f")


def _is_symbol(char: str) -> bool:
    return not char.isascii() and (unicodedata.category(char) in ("Sm", "So", "Sc", "Sk") or char in _MARKS)


def is_garbage(text: str) -> bool:
    """True when ``text`` reads as unmapped glyphs rather than language (see the module docstring).

    Only the non-ASCII characters are looked at one by one (regular expressions count the rest),
    so ordinary text costs little."""
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return False  # the common case, decided without looking at each character
    compact = "".join(text.split())  # the non-space characters
    if not compact:
        return False
    size = len(compact)
    non_ascii = _NON_ASCII.findall(compact)
    bad = len(_ASCII_CONTROL.findall(compact)) + sum(_is_bad(char) for char in non_ascii)
    if bad / size > MAX_BAD_SHARE and (size >= MIN_JUDGED_CHARS or bad / size > 0.5):
        return True
    if size < MIN_JUDGED_CHARS:
        return False
    wedged = sum(_is_symbol(match.group()) for match in _WEDGED.finditer(compact))
    if wedged >= MIN_WEDGED_SYMBOLS and wedged / size > MAX_WEDGED_SYMBOL_SHARE:
        return True
    accented = sum(char.isalpha() and "LATIN" in unicodedata.name(char, "") for char in non_ascii)
    latin = len(_ASCII_LETTER.findall(compact)) + accented
    return latin >= MIN_LATIN_LETTERS and accented / latin > MAX_DIACRITIC_SHARE

"""Where each piece of a PDF page's extracted text is drawn: the words of its text layer and the boxes
read by OCR, located in the page's final text (`positions.TextPositions`).

The page text is not the text layer verbatim: garbage blocks are dropped, accents composed, NFKC
applied and line-break hyphens joined (`pdf_text_quality.py`); in Markdown mode pymupdf4llm adds
markup and may reorder blocks. So pieces are located by their runs of letters and digits, normalised
like the page: the pieces' runs are aligned with the page text's (difflib's matching blocks). A run
found equal is located character for character; a stretch that differs only in where it is cut into
runs (``ef-`` ``ficient`` against the joined ``efficient``) likewise; what the page text does not
hold (dropped garbage, text the Markdown conversion left out) stays unlocated.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from carrag.services.parsers.pdf_text_quality import normalise_text
from carrag.services.positions import TextPositions

# A word as PyMuPDF gives it: (x0, y0, x1, y1, text, block, line, word), its rectangle in the page's
# unrotated coordinates; OCR boxes take the same form (`pdf_ocr.placed`).
Piece = tuple[float, float, float, float, str, int, int, int]

_RUN = re.compile(r"[^\W_]+")
# A stretch found again after the first alignment (text moved by the Markdown conversion) must be at
# least this many runs long: a lone word matched out of order is as likely another occurrence of it.
MIN_MOVED_RUNS = 3


def text_layer_pieces(textpage: Any) -> dict[int, list[Piece]]:
    """The words of a `pymupdf.TextPage` by block number (as in its blocks)."""
    words = textpage.extractWORDS()
    return {block: list(group) for block, group in itertools.groupby(words, key=operator.itemgetter(5))}


def page_words(page: Any) -> list[Piece]:
    """The words of a `pymupdf.Page`'s text layer in content order."""
    import pymupdf

    return page.get_text("words", flags=pymupdf.TEXTFLAGS_WORDS)


def after_blocks(pieces: Sequence[Piece], more: Sequence[Piece]) -> list[Piece]:
    """``more`` as one more block after those of ``pieces`` (text appended to a page)."""
    block = max((piece[5] for piece in pieces), default=-1) + 1
    return [(*piece[:5], block, *piece[6:]) for piece in more]


def locate(positions: TextPositions, page: int, offset: int, text: str, pieces: Sequence[Piece]) -> None:
    """Add to ``positions`` where each of ``pieces`` lies in ``text``, the page's text, which starts at
    ``offset`` in the document text."""
    page_runs = [(match.start(), match.end()) for match in _RUN.finditer(text)]
    right = [text[start:end] for start, end in page_runs]
    owners: list[int] = []  # the piece of each run
    left: list[str] = []
    for index, piece in enumerate(pieces):
        runs = _RUN.findall(normalise_text(piece[4]))
        left += runs
        owners += [index] * len(runs)
    found: list[tuple[int, int, int]] = []  # (start, end, piece) of each stretch located
    for tag, a_runs, b_runs in _aligned(left, right):
        if tag == "equal":
            found += [(*page_runs[b], owners[a]) for a, b in zip(a_runs, b_runs, strict=True)]
            continue
        characters = [position for b in b_runs for position in range(*page_runs[b])]
        used = 0
        for a in a_runs:
            found.append((characters[used], characters[used + len(left[a]) - 1] + 1, owners[a]))
            used += len(left[a])
    found.sort()
    # consecutive stretches on one line are one piece (what `TextPositions.regions` merges them into)
    merged: list[list[Any]] = []  # [start, end, (block, line), [x0, y0, x1, y1]]
    for start, end, index in found:
        x0, y0, x1, y1, _, block, line, _ = pieces[index]
        last = merged[-1] if merged else None
        if last is not None and last[2] == (block, line):
            box = last[3]
            last[1], last[3] = end, [min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)]
        else:
            merged.append([start, end, (block, line), [x0, y0, x1, y1]])
    for start, end, (block, line), box in merged:
        positions.add(page, offset + start, offset + end, block, line, tuple(box))


def _aligned(left: list[str], right: list[str]) -> list[tuple[str, list[int], list[int]]]:
    """Stretches of ``left`` and ``right`` (lists of run indexes) holding the same characters: ``equal``
    runs, and stretches (``replace``) that differ only in where runs are cut. After the first
    alignment, what is left is aligned again (blocks the conversion moved), each time keeping only
    stretches of at least `MIN_MOVED_RUNS` runs, until nothing more is found."""
    if left == right:
        return [("equal", list(range(len(left))), list(range(len(right))))]
    found: list[tuple[str, list[int], list[int]]] = []
    a_free, b_free = list(range(len(left))), list(range(len(right)))
    shortest = 1
    while a_free and b_free:
        sub_left, sub_right = [left[a] for a in a_free], [right[b] for b in b_free]
        more = [
            (tag, a_free[a0:a1], b_free[b0:b1])
            for tag, a0, a1, b0, b1 in SequenceMatcher(None, sub_left, sub_right, autojunk=False).get_opcodes()
            if (tag == "equal" or (tag == "replace" and "".join(sub_left[a0:a1]) == "".join(sub_right[b0:b1])))
            and a1 - a0 >= shortest
        ]
        if not more:
            break
        found += more
        a_used = {a for _, a_runs, _ in more for a in a_runs}
        b_used = {b for _, _, b_runs in more for b in b_runs}
        a_free = [a for a in a_free if a not in a_used]
        b_free = [b for b in b_free if b not in b_used]
        shortest = MIN_MOVED_RUNS
    return found

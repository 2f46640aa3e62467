"""Split a passage into sentences, keeping each one's character offsets in the passage.

Boundaries: sentence punctuation followed by white space and a capital, digit or bracket; blank
lines; a line break before a list item, heading or table line; the start and end of a fenced code block; a line break after a line ending in
a colon or without final punctuation when the next line starts with a capital (headings, PDF
title lines), except inside a paragraph of two short lines (a form's label and value: "Server" /
"Quack Quackling"; a field number alone on the line before and after bounds it like a blank line). Lines of a table (markdown ``|`` lines; csv/xlsx rows: several short comma-separated
fields, next to another such line, so that a wrapped PDF line with two commas is prose) are one unit
each. Soft
line breaks inside a sentence (wrapped PDF text) are not boundaries. Units longer than
``MAX_SENTENCE_CHARS`` are cut at ``;`` or at line breaks.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

MAX_SENTENCE_CHARS = 400
MIN_SENTENCE_CHARS = 3
MAX_FORM_LINE_CHARS = 40  # a label or value of a key-value form
MAX_FORM_LINE_WORDS = 5
WRAPPED_LINE_CHARS = 50  # a line this long, as long as its neighbours, is wrapped prose, not a title line
WRAP_SHARE = 0.85

_ABBREVIATIONS = {"e.g", "i.e", "etc", "fig", "no", "vs", "mr", "mrs", "dr", "st", "approx", "cf", "al", "inc", "ltd"}
_SENTENCE_END = re.compile(r"[.!?…](?:[\"')\]]*)(?=\s+[\"'(\[]?[A-Z0-9•\-*#])")
_LINE_START_ITEM = re.compile(r"^\s*(?:[-*•#|>]|\d{1,3}[.)]\s|[A-Za-z][.)]\s)")
_FIELD_COMMA = re.compile(r"(?<!\d),|,(?!\d)")  # a comma that is not a thousands separator
_FIELD_MARKER = re.compile(r"\(?(?:\d{1,3}|[A-Za-z]|[ivxIVX]{1,4})[.)]?|[•*-]")  # "3", "b)", "iv." alone on a line
_FENCE = re.compile(r"^[ \t]*(```|~~~)([^\n]*)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Sentence:
    start: int  # offsets in the passage text
    end: int
    text: str  # the passage text between them, white space collapsed
    is_table_row: bool = False


def is_table_line(line: str) -> bool:
    """A csv/xlsx row (short comma-separated fields, no sentence inside) or a markdown table line."""
    line = line.strip()
    if line.startswith("|") and line.count("|") >= 2:
        return True
    fields = _FIELD_COMMA.split(line)
    if len(fields) < 3 or ". " in line:
        return False
    return sum(len(field) for field in fields) / len(fields) <= 40


def code_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks (```/~~~), fences included.

    A chunk can begin inside a block whose opening fence lies in the previous chunk: with an odd
    number of fences, a first fence without a language tag is taken to close a block begun before.
    """
    fences = list(_FENCE.finditer(text))
    spans: list[tuple[int, int]] = []
    if len(fences) % 2 == 1 and not fences[0].group(2).strip():
        spans.append((0, fences[0].end()))
        fences = fences[1:]
    for opening, closing in itertools.zip_longest(fences[::2], fences[1::2]):
        spans.append((opening.start(), closing.end() if closing is not None else len(text)))
    return spans


def table_lines(lines: list[str]) -> list[bool]:
    """Which lines are table rows, in context: a markdown line always; a comma-separated line only next
    to another one (a csv/xlsx sheet has rows; a wrapped PDF line "models, such as TF-IDF or BM25, are
    the de" is prose)."""
    candidates = [is_table_line(line) for line in lines]
    rows = []
    for index, line in enumerate(lines):
        if line.strip().startswith("|") or not candidates[index]:
            rows.append(candidates[index])
            continue
        neighbours = [lines[i] for i in (index - 1, index + 1) if 0 <= i < len(lines)]
        rows.append(any(is_table_line(other) and not other.strip().startswith("|") for other in neighbours))
    return rows


def _line_breaks(text: str) -> list[int]:
    """Offsets where a line ends a unit (the offset of the newline)."""
    breaks: list[int] = []
    lines = text.split("\n")
    rows = table_lines(lines)
    position = 0
    for index, (current, following) in enumerate(itertools.pairwise(lines)):
        position += len(current)
        stripped, next_stripped = current.strip(), following.strip()
        hard = (
            not stripped
            or not next_stripped
            or rows[index]
            or rows[index + 1]
            or _LINE_START_ITEM.match(following) is not None
            or stripped.endswith(":")
            or (
                stripped[-1] not in ".,;:-–—("
                and next_stripped[:1].isupper()
                and len(stripped) < 80
                and not _wrapped(lines, index)
            )
            or stripped[-1] in ".!?"
            or (index > 0 and _label_and_value(lines, index - 1))  # a form field ends with its value
        )
        if hard and not _label_and_value(lines, index):
            breaks.append(position)
        position += 1
    return breaks


def _wrapped(lines: list[str], index: int) -> bool:
    """Whether line ``index`` is prose wrapped at the paragraph's width (a plain-text book's "the well-known
    Anna Pavlovna" / "Scherer, maid of honor"), not a title line: long, and about as long as its longer
    neighbour, itself long (a caption between two short lines is a line of its own)."""
    length = len(lines[index].strip())
    neighbours = [len(lines[i].strip()) for i in (index - 1, index + 1) if 0 <= i < len(lines)]
    widest = max(neighbours, default=0)
    return length >= WRAPPED_LINE_CHARS and widest >= WRAPPED_LINE_CHARS and length >= WRAP_SHARE * widest


def _label_and_value(lines: list[str], index: int) -> bool:
    """Whether lines ``index`` and ``index + 1`` are a form's label and value ("Server" / "Quack Quackling",
    as an HTML or docx key-value block reads): a paragraph of exactly these two short lines, the first
    without final punctuation and neither a list item, heading or table line. A numbered form's field
    marker on its own line ("3" / "Server" / "Quack Quackling" / "4") bounds the field like a blank line."""
    label, value = lines[index].strip(), lines[index + 1].strip()
    before = lines[index - 1].strip() if index > 0 else ""
    after = lines[index + 2].strip() if index + 2 < len(lines) else ""
    fenced = all(not line or _FIELD_MARKER.fullmatch(line) for line in (before, after))
    if not fenced or not label or not value or label[-1] in ".!?:;,":
        return False
    if any(_LINE_START_ITEM.match(line) or is_table_line(line) for line in (label, value)):
        return False
    return all(len(line) <= MAX_FORM_LINE_CHARS and len(line.split()) <= MAX_FORM_LINE_WORDS for line in (label, value))


def _is_abbreviation(text: str, end: int) -> bool:
    word = re.search(r"([A-Za-z.]+)$", text[max(0, end - 8) : end])
    return word is not None and word.group(1).lower().rstrip(".") in _ABBREVIATIONS


def split_sentences(text: str) -> list[Sentence]:
    cuts = {0, len(text)}
    cuts.update(_line_breaks(text))
    cuts.update(offset for span in code_spans(text) for offset in span)  # a code block is a unit of its own
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if text[match.start()] == "." and _is_abbreviation(text, match.start()):
            continue
        if text[match.start()] == "." and match.start() > 0 and text[match.start() - 1].isdigit():
            after = text[end:].lstrip()
            if after[:1].isdigit():
                continue  # 1. 2 …
        cuts.add(end)
    ordered = sorted(cuts)
    lines = text.split("\n")
    line_starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    row_starts = {start for start, row in zip(line_starts, table_lines(lines), strict=True) if row}
    sentences: list[Sentence] = []
    for start, end in itertools.pairwise(ordered):
        for piece_start, piece_end in _cut_long(text, start, end):
            sentence = _make(text, piece_start, piece_end, line_starts, row_starts)
            if sentence is not None:
                sentences.append(sentence)
    return sentences


def _cut_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    if end - start <= MAX_SENTENCE_CHARS:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    while end - start > MAX_SENTENCE_CHARS:
        window = text[start : start + MAX_SENTENCE_CHARS]
        cut = max(window.rfind("; "), window.rfind("\n"), window.rfind(", "))
        if cut < MAX_SENTENCE_CHARS // 3:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = MAX_SENTENCE_CHARS
        pieces.append((start, start + cut + 1))
        start += cut + 1
    pieces.append((start, end))
    return pieces


def _make(text: str, start: int, end: int, line_starts: list[int], row_starts: set[int]) -> Sentence | None:
    raw = text[start:end]
    leading = len(raw) - len(raw.lstrip())
    trailing = len(raw) - len(raw.rstrip())
    start, end = start + leading, end - trailing
    if end - start < MIN_SENTENCE_CHARS:
        return None
    body = text[start:end]
    if not any(ch.isalnum() for ch in body):
        return None
    on_table_line = line_starts[bisect.bisect_right(line_starts, start) - 1] in row_starts
    return Sentence(start, end, " ".join(body.split()), is_table_row=on_table_line and "\n" not in body)

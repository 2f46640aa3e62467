"""How running text is read: plain text without inline markup, lines joined into logical lines where a
sentence wraps, sentences, and lines of code told from prose. The answer units (`units`) are built on it."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_UNIT_CHARS = 400  # longer logical lines are cut at ``;``/``,``/spaces
_ABBREVIATIONS = {"e.g", "i.e", "etc", "fig", "no", "vs", "mr", "mrs", "dr", "st", "approx", "cf", "al", "inc", "ltd"}
_CODE = re.compile(
    r"\\[A-Za-z@]{2,}|(?<![\w-])--?[A-Za-z][\w-]*|\b\w+\([^)]*\)|<-|[{}$]|::|=>|==|^\s*[>$%]\s|^\s*[:@]\w"
)
_SENTENCE_END = re.compile(r"[.!?…](?:[\"')\]]*)(?=\s+[\"'(\[]?[A-Z0-9•\-*#`])")


_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^)]*\))*(?:\s+\"[^\"]*\")?\)")
_ROLE = re.compile(r"\{[\w:.-]+\}`([^`]*)`|:[\w:.-]+:`~?([^`]*)`")  # MyST {func}`x`, reST :class:`~a.B`
_EMPHASIS = re.compile(
    r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1|(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?!\w)|(?<!\w)_(?=\S)([^_\n]+?)(?<=\S)_(?!\w)"
)
_CODE_SPAN = re.compile(r"(`+)\s?(.+?)\s?\1")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_ROLE_TARGET = re.compile(r"\s*<[^<>\s]+>$")  # ":ref:`text <target>`"


def plain(text: str) -> str:
    """Markdown/reST inline markup removed, white space collapsed: what an answer quotes."""
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _ROLE.sub(lambda m: _ROLE_TARGET.sub("", m.group(1) if m.group(1) is not None else m.group(2)), text)
    text = _CODE_SPAN.sub(lambda m: m.group(2), text)
    for _ in range(2):  # nested emphasis: ***x***
        text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3) or m.group(4) or "", text)
    text = _ESCAPE.sub(r"\1", text)
    return " ".join(text.replace("\u00ad", "").replace("¶", "").split())


# --- lines -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Line:
    start: int
    end: int
    raw: str

    @property
    def text(self) -> str:
        return self.raw.strip()

    @property
    def indent(self) -> int:
        expanded = self.raw.expandtabs(8)
        return len(expanded) - len(expanded.lstrip())

    @property
    def blank(self) -> bool:
        return not self.raw.strip()

    @property
    def text_start(self) -> int:
        return self.start + len(self.raw) - len(self.raw.lstrip())


def lines_of(text: str) -> list[Line]:
    lines, position = [], 0
    for raw in text.split("\n"):
        lines.append(Line(position, position + len(raw), raw))
        position += len(raw) + 1
    return lines


def looks_like_code(line: str) -> bool:
    """A line of code or a command rather than prose: a prompt (``$ ``, ``> ``), or code tokens (``\\cmd``,
    ``--opt``, ``f(x)``, ``<-``, braces) in a line that is mostly not words."""
    stripped = plain(line)
    if not stripped:
        return False
    if re.match(r"^[>$%] ", stripped):
        return True
    if _CODE.search(stripped) is None:
        return False
    tokens = stripped.split()
    words = sum(bool(re.fullmatch(r"[A-Za-z][a-z]+[,.;:]?", token)) for token in tokens)
    return len(tokens) <= 4 or words < 0.6 * len(tokens)


def is_prose(line: str) -> bool:
    """A line of running text: mostly words, not code."""
    tokens = line.split()
    words = sum(bool(re.fullmatch(r"[(\"']?[A-Za-z][a-z'’-]*[,.;:)\"']*", token)) for token in tokens)
    return len(tokens) >= 5 and words >= 0.7 * len(tokens) and not looks_like_code(line)


def logical_lines(lines: list[Line]) -> list[list[Line]]:
    """Lines joined where a sentence wraps; a line stands alone when it ends with a colon, is code, or is a
    short title line before a capitalised one (and not as long as its neighbours, as wrapped prose is)."""
    groups: list[list[Line]] = []
    for index, line in enumerate(lines):
        if groups and not _ends_logical_line(lines, index - 1):
            groups[-1].append(line)
        else:
            groups.append([line])
    return groups


def _ends_logical_line(lines: list[Line], index: int) -> bool:
    current, following = lines[index].text, lines[index + 1].text
    if current.endswith(":") or looks_like_code(current) or looks_like_code(following):
        return True
    if current[-1] in "?!" or (current[-1] == "." and following[:1].isupper()):
        return True
    return bool(current[-1] not in ".,;:-–—(" and following[:1].isupper() and not _wrapped(lines, index))


def _wrapped(lines: list[Line], index: int) -> bool:
    """Whether line ``index`` is prose wrapped at the paragraph's width: long, and about as long as its
    longer neighbour."""
    length = len(lines[index].text)
    neighbours = [len(lines[i].text) for i in (index - 1, index + 1) if 0 <= i < len(lines)]
    widest = max(neighbours, default=0)
    return length >= 50 and widest >= 50 and length >= 0.85 * widest


def joined(lines: Sequence[Line]) -> str:
    return unwrap("\n".join(line.raw for line in lines))


def unwrap(text: str) -> str:
    """Wrapped text as one line: a word hyphenated at the line end (‐ U+2010, soft hyphen) joined."""
    text = re.sub(r"[\u2010\u00ad]\n\s*", "", text)
    return " ".join(text.split())


def sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans between ``start`` and ``end`` (one logical line); long ones cut."""
    cuts = [start]
    for match in _SENTENCE_END.finditer(text, start, end):
        position = match.start()
        if text[position] == "." and _abbreviation(text, position):
            continue
        if (
            text[position] == "."
            and position > 0
            and text[position - 1].isdigit()
            and text[match.end() :].lstrip()[:1].isdigit()
        ):
            continue  # "1. 2"
        cuts.append(match.end())
    cuts.append(end)
    spans = []
    for first, last in itertools.pairwise(cuts):
        piece = text[first:last]
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        if last - trail - first - lead >= 3:
            spans.extend(_cut_long(text, first + lead, last - trail))
    return spans


def _abbreviation(text: str, end: int) -> bool:
    word = re.search(r"([A-Za-z.]+)$", text[max(0, end - 8) : end])
    return word is not None and word.group(1).lower().rstrip(".") in _ABBREVIATIONS


def _cut_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    pieces = []
    while end - start > MAX_UNIT_CHARS:
        window = text[start : start + MAX_UNIT_CHARS]
        cut = max(window.rfind("; "), window.rfind("\n"), window.rfind(", "))
        if cut < MAX_UNIT_CHARS // 3:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = MAX_UNIT_CHARS
        pieces.append((start, start + cut + 1))
        start += cut + 1
        while start < end and text[start].isspace():
            start += 1
    pieces.append((start, end))
    return pieces


def first_sentence(text: str) -> str:
    match = _SENTENCE_END.search(text)
    return text[: match.end()] if match else text

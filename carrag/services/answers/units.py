"""Answer units: the pieces of a passage an answer can quote, read from how documents hold facts.

A passage is Markdown-ish text (Markdown and HTML as Markdown, reST, man pages, PDF plain text,
csv and JSON). Its lines are read into blocks by their structure, and each block gives its units:

- **paragraphs**: wrapped lines are joined into logical lines (a line ends at a blank line, at a
  sentence end, before a list, table, heading or fence, and when it stands alone: a short title
  line, or a line of code), split into sentences (``sentence``);
- **tables** (``| a | b |`` rows, csv rows): each row with its column names (``row``);
- **lists**: each item with its lead-in (``item``) and the whole list with it (``list``);
- **definitions**: a term followed by an indented or ``: `` description (man pages, reST, HTML
  ``<dl>``), each sentence of the description with its term (``definition``);
- **commands**: a line of code followed by the line describing it, or both on one line separated by
  a tab (cheat sheets, reference cards) (``command``); fenced and ``::`` code blocks (``code``) with
  the line announcing them;
- **records**: JSON members and two-line label/value forms, read as ``name: value`` pairs (``record``).

Headings are not units; each unit carries the nearest one above it. Every unit's text is plain
(Markdown emphasis, code marks, escapes, link targets and roles removed) and keeps its character
span in the passage, for highlights.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from carrag.services.answers.prose import (
    Line,
    first_sentence,
    is_prose,
    joined,
    lines_of,
    logical_lines,
    looks_like_code,
    plain,
    sentences,
    unwrap,
)
from carrag.services.answers.tables import TABLE_SEPARATOR, align, cells, column_name, is_csv_line, is_table_line

MAX_LIST_CHARS = 700  # a whole list is a unit only up to this length
MAX_CODE_LINES = 12

_FENCE = re.compile(r"^\s*(```|~~~)")
_UNDERLINE = re.compile(r"^\s*([=\-~^*#+])\1{2,}\s*$")  # reST section underline, a rule (not a ``` fence)
_ITEM = re.compile(r"^(\s*)(?:[-*+•▪◦‣–]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+(?=\S)")
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_MEMBER = re.compile(r'^\s*"([^"\n]{1,80})"\s*:\s*(.+?)\s*,?\s*$')  # a JSON member on one line
_DESCRIPTION = re.compile(r"^\s*:\s+(\S.*)$")  # "term" / ":   description" (HTML <dl> as Markdown)
_SAME_LINE_PAIR = re.compile(r"^(\s*)(\S[^\t]{0,40}?)(?:\t+| {3,})(\S.*)$")
_DOT_LEADERS = re.compile(r"(?:\.\s?){5,}")  # a table-of-contents entry: "Introduction . . . . 3"


@dataclass(frozen=True, slots=True)
class Unit:
    kind: str  # sentence, row, item, list, definition, command, code, record
    start: int  # span in the passage
    end: int
    text: str  # the unit's own plain text
    label: str = ""  # what it is read with: a list's lead-in, a definition's term, the command, a table's title
    heading: str = ""  # the nearest heading above it
    cells: tuple[tuple[str, str], ...] = ()  # a row or record: (name, value) pairs

    @property
    def display(self) -> str:
        """The unit as an answer quotes it: a row as ``column: value`` pairs, an item after its lead-in,
        a definition after its term, a command before its description."""
        if self.cells:
            return "; ".join(f"{name}: {value}" if name and name != value else value for name, value in self.cells)
        if not self.label:
            return self.text
        if self.kind == "command":
            return f"{self.label} — {self.text}"
        joiner = " " if self.label.endswith((":", "—")) else ": "
        if self.kind == "code":
            joiner = "\n" if "\n" in self.text else joiner
        return f"{self.label}{joiner}{self.text}"

    @property
    def readable(self) -> str:
        """What the embedder reads: the display, a table row with its table's title."""
        if self.cells and self.label:
            return f"{self.label}\n{self.display}"
        return self.display

    @property
    def is_contents_entry(self) -> bool:
        return _DOT_LEADERS.search(self.text) is not None


# --- plain text ------------------------------------------------------------------------------------


def _heading_of(lines: Sequence[Line], index: int) -> str | None:
    """The heading text when line ``index`` is one: ``# Title``, or a reST title over its underline."""
    line = lines[index]
    match = _MD_HEADING.match(line.raw)
    if match:
        return plain(match.group(1))
    following = lines[index + 1] if index + 1 < len(lines) else None
    shouting = line.text.isupper() and len(line.text) <= 60 and line.text[-1:].isalpha()
    if shouting and (following is None or following.blank or following.indent > line.indent):
        return plain(line.text)  # a man page's "DESCRIPTION", a PDF's "INTRODUCTION"
    if (
        following is not None
        and not line.blank
        and _UNDERLINE.match(following.raw)
        and len(following.text) >= len(line.text) * 0.8
        and not is_table_line(line.raw)
    ):
        return plain(line.text)
    return None


# --- blocks ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Reader:
    text: str
    lines: list[Line]
    units: list[Unit] = field(default_factory=list)
    heading: str = ""

    def add(self, kind: str, start: int, end: int, body: str, label: str = "", cells: tuple = ()) -> None:
        plain_body = plain(body) if kind != "code" else body.strip("\n")
        if not any(char.isalnum() for char in plain_body) and not cells:
            return
        self.units.append(Unit(kind, start, end, plain_body, plain(label), self.heading, cells))

    def lead_in(self) -> str:
        """The sentence right before, when it announces what follows (ends with a colon)."""
        if self.units and self.units[-1].kind in ("sentence", "definition") and self.units[-1].text.endswith(":"):
            return self.units[-1].display
        return ""

    def read(self, first: int, last: int, label: str = "") -> None:
        """Units of lines ``first``..``last`` (exclusive); ``label`` is given to the prose inside (a definition's term)."""
        index = first
        paragraph: list[Line] = []

        def flush() -> None:
            if paragraph:
                self.paragraph(paragraph, label)
                paragraph.clear()

        while index < last:
            line = self.lines[index]
            if line.blank:
                flush()
                index += 1
                continue
            heading = _heading_of(self.lines, index)
            if heading is not None:
                flush()
                self.heading = heading
                underlined = index + 1 < last and _UNDERLINE.match(self.lines[index + 1].raw)
                index += 2 if underlined else 1
                continue
            if _FENCE.match(line.raw):
                flush()
                index = self.fenced(index, last)
                continue
            if _UNDERLINE.match(line.raw) and not paragraph:
                index += 1  # a rule, or an overline
                continue
            if is_table_line(line.raw) or (is_csv_line(line.raw) and self._csv_neighbour(index, last)):
                flush()
                index = self.table(index, last)
                continue
            if _ITEM.match(line.raw) and not (
                paragraph and line.indent > paragraph[0].indent and not _ITEM.match(paragraph[0].raw)
            ):
                flush()
                index = self.items(index, last)
                continue
            if _MEMBER.match(line.raw):
                flush()
                index = self.members(index, last)
                continue
            if _DESCRIPTION.match(line.raw) and paragraph:
                term = paragraph.pop()
                flush()
                index = self.described(term, index, last)
                continue
            if self._starts_definition(index, last, paragraph):
                flush()
                index = self.definition(index, last)
                continue
            pair = _SAME_LINE_PAIR.match(line.raw)
            if pair and not paragraph and ("\t" in line.raw or looks_like_code(pair.group(2))):
                index = self.same_line_pair(index, last, pair)
                continue
            if paragraph and paragraph[-1].text.endswith("::"):
                flush()
            if not paragraph and self.units and self.units[-1].text.endswith("::") and line.indent > 0:
                index = self.literal(index, last)
                continue
            paragraph.append(line)
            index += 1
        flush()

    def _csv_neighbour(self, index: int, last: int) -> bool:
        return any(
            first <= other < last and not self.lines[other].blank and is_csv_line(self.lines[other].raw)
            for other, first in ((index - 1, 0), (index + 1, 0))
        )

    def _starts_definition(self, index: int, last: int, paragraph: list[Line]) -> bool:
        """A term line (short, no sentence end) directly followed by more indented lines: a man page option,
        a reST definition list."""
        line = self.lines[index]
        if paragraph or index + 1 >= last:
            return False
        body = self.lines[index + 1]
        # a passage can begin inside a description: its first line is a term only when short
        longest = 40 if index == 0 else 80
        return (
            not body.blank
            and body.indent > line.indent
            and len(line.text) <= longest
            and line.text[-1:] not in ".,;"
            and not _ITEM.match(body.raw)
        )

    # -- the blocks ---------------------------------------------------------------------------------

    def fenced(self, index: int, last: int) -> int:
        """A fenced block: code with the line announcing it, or, when its lines are prose (a text document
        kept preformatted), read as text."""
        end = index + 1
        while end < last and not _FENCE.match(self.lines[end].raw):
            end += 1
        self.block(index + 1, end)
        return min(end + 1, last)

    def block(self, first: int, end: int) -> None:  # the lines inside a fence
        body = [line for line in self.lines[first:end] if not line.blank]
        if sum(is_prose(line.text) for line in body) * 2 > len(body):
            self.read(first, end)
        elif body:
            code = "\n".join(line.raw.rstrip() for line in self.lines[first:end][:MAX_CODE_LINES])
            self.add("code", body[0].start, body[-1].end, _dedent(code), self.lead_in())

    def literal(self, index: int, last: int) -> int:
        """A reST literal block: the indented lines after a paragraph ending in ``::``."""
        base = self.lines[index].indent
        end = index
        while end < last and (self.lines[end].blank or self.lines[end].indent >= base):
            end += 1
        body = [line for line in self.lines[index:end] if not line.blank][:MAX_CODE_LINES]
        announce = self.units[-1].display.removesuffix(":") + ":" if self.units else ""
        code = "\n".join(line.raw.rstrip() for line in body)
        self.add("code", body[0].start, body[-1].end, _dedent(code), announce)
        return end

    def table(self, index: int, last: int) -> int:
        title = self.units[-1].text if self.units and self.units[-1].kind == "sentence" else self.heading
        markdown = is_table_line(self.lines[index].raw)
        end = index
        while (
            end < last
            and not self.lines[end].blank
            and (
                is_table_line(self.lines[end].raw)
                if markdown
                else is_csv_line(self.lines[end].raw) or (end > index and "," in self.lines[end].text)
            )
        ):
            end += 1
        rows = [line for line in self.lines[index:end] if not TABLE_SEPARATOR.match(line.raw)]
        separated = end - index > 1 and TABLE_SEPARATOR.match(self.lines[index + 1].raw) is not None
        # a first row without digits over rows with them names the columns (a table without a ``|---|`` line)
        first_has_digit = any(char.isdigit() for char in rows[0].text)
        later_digits = any(char.isdigit() for row in rows[1:] for char in row.text)
        has_header = separated or (not first_has_digit and len(rows) > 1 and (later_digits or not markdown))
        names = tuple(column_name(cell) for cell in cells(rows[0].raw)) if has_header else ()
        body = rows[1:] if has_header else rows
        read = [[plain(cell) for cell in cells(row.raw)] for row in body]
        # a short markdown row comes from merged cells; a short csv row lacks its trailing fields
        aligned = align(names, read) if markdown else read
        for line, row_cells in zip(body, aligned, strict=True):
            pairs = tuple(
                (names[i] if i < len(names) else "", value) for i, value in enumerate(row_cells) if value.strip()
            )
            self.units.append(Unit("row", line.start, line.end, plain(line.text), plain(title), self.heading, pairs))
        return end

    def items(self, index: int, last: int) -> int:
        lead = self.lead_in()
        base = self.lines[index].indent
        spans: list[tuple[int, int]] = []  # each item's line range
        end = index
        while end < last:
            line = self.lines[end]
            if line.blank:
                following = self.lines[end + 1] if end + 1 < last else None
                if following is None or following.blank or following.indent < base:
                    break
                if following.indent == base and not _ITEM.match(following.raw):
                    break
                end += 1
                continue
            marker = _ITEM.match(line.raw)
            if marker and line.indent == base:
                spans.append((end, end + 1))
            elif spans and (line.indent > base or not _ITEM.match(line.raw)):
                if line.indent <= base and (is_table_line(line.raw) or _heading_of(self.lines, end) is not None):
                    break
                spans[-1] = (spans[-1][0], end + 1)  # a continuation (wrapped item, nested list)
            else:
                break
            end += 1
        texts = []
        for first, stop in spans:
            lines = [line for line in self.lines[first:stop] if not line.blank]
            body = joined(lines)
            body = _ITEM.sub("", body, count=1)
            texts.append(plain(body))
            self.add("item", lines[0].start, lines[-1].end, body, lead)
        if len(texts) > 1:
            whole = "; ".join(texts)
            if len(whole) + len(lead) <= MAX_LIST_CHARS:
                first_line, last_line = self.lines[spans[0][0]], self.lines[spans[-1][1] - 1]
                self.units.append(Unit("list", first_line.start, last_line.end, whole, plain(lead), self.heading))
        return max(end, index + 1)

    def members(self, index: int, last: int) -> int:
        base = self.lines[index].indent
        end = index
        pairs = []
        while end < last and self.lines[end].indent == base and (match := _MEMBER.match(self.lines[end].raw)):
            value = match.group(2).strip().rstrip(",").strip('"')
            if value not in ("{", "["):
                pairs.append((match.group(1), value))
            end += 1
        if pairs:
            first, final = self.lines[index], self.lines[end - 1]
            self.units.append(
                Unit(
                    "record", first.start, final.end, self.text[first.start : final.end], "", self.heading, tuple(pairs)
                )
            )
        return max(end, index + 1)

    def described(self, term: Line, index: int, last: int) -> int:
        """``term`` / ``:   description`` (more indented lines continue it): each description's sentences
        with the term."""
        end = index
        descriptions: list[list[Line]] = []
        while end < last:
            line = self.lines[end]
            if _DESCRIPTION.match(line.raw):
                descriptions.append([line])
            elif not line.blank and line.indent > 0 and descriptions:
                descriptions[-1].append(line)
            elif not (line.blank and end + 1 < last and _DESCRIPTION.match(self.lines[end + 1].raw)):
                break
            end += 1
        for lines in descriptions:
            first = lines[0]
            marker = len(first.raw) - len(first.raw.lstrip(" \t:"))
            for start, stop in sentences(self.text, first.start + marker, lines[-1].end):
                self.add("definition", start, stop, unwrap(self.text[start:stop]), term.text)
        return max(end, index + 1)

    def definition(self, index: int, last: int) -> int:
        term = self.lines[index]
        end = index + 1
        while end < last and (self.lines[end].blank or self.lines[end].indent > term.indent):
            end += 1
        while end > index + 1 and self.lines[end - 1].blank:
            end -= 1
        count = len(self.units)
        self.read(index + 1, end, label=term.text)
        for position in range(count, len(self.units)):
            unit = self.units[position]
            if unit.kind == "sentence":
                self.units[position] = Unit(
                    "definition", unit.start, unit.end, unit.text, plain(term.text), unit.heading
                )
        return end

    def same_line_pair(self, index: int, last: int, pair: re.Match[str]) -> int:
        """``e<TAB>Move to the end of the word.``: a command and its description on one line; more indented
        lines after it continue the description."""
        line = self.lines[index]
        end = index + 1
        while end < last and not self.lines[end].blank and self.lines[end].indent > line.indent + len(pair.group(2)):
            end += 1
        description = " ".join([pair.group(3), *(other.text for other in self.lines[index + 1 : end])])
        self.add("command", line.start, self.lines[end - 1].end, first_sentence(description), pair.group(2).strip())
        return end

    # -- prose --------------------------------------------------------------------------------------

    def paragraph(self, lines: list[Line], label: str) -> None:
        kind = "definition" if label else "sentence"
        fields = _form_fields(lines)
        if fields is not None:
            for name, value in fields:
                self.units.append(
                    Unit(
                        "record",
                        name.start,
                        value.end,
                        f"{name.text} {value.text}",
                        "",
                        self.heading,
                        ((plain(name.text), plain(value.text)),),
                    )
                )
            return
        for group in logical_lines(lines):
            if len(group) == 1 and self._command_pair(group[0]):
                continue
            for start, end in sentences(self.text, group[0].text_start, group[-1].end):
                self.add(kind, start, end, unwrap(self.text[start:end]), label)

    def _command_pair(self, line: Line) -> bool:
        """A description line whose command is the line right before (a reference card): joined to it."""
        previous = self.units[-1] if self.units else None
        if previous is None or previous.kind != "sentence" or previous.label or looks_like_code(line.text):
            return False
        between = self.text[previous.end : line.start]
        if between.count("\n") != 1 or not looks_like_code(previous.text) or previous.text.endswith((".", ":")):
            return False
        self.units[-1] = Unit("command", previous.start, line.end, plain(line.text), previous.text, previous.heading)
        return True


_FIELD_MARKER = re.compile(r"\(?(?:\d{1,3}|[A-Za-z]|[ivxIVX]{1,4})[.)]?|[•*-]")  # "3", "b)", "iv." alone on a line


def _form_fields(lines: list[Line]) -> list[tuple[Line, Line]] | None:
    """A form read as lines: a paragraph of a short label and its value ("Server" / "Quack Quackling"), or
    several such pairs each after a field marker alone on its line ("2" / "Server" / "Quack Quackling")."""
    groups: list[list[Line]] = [[]]
    numbered = _FIELD_MARKER.fullmatch(lines[0].text) is not None
    for line in lines:
        if numbered and _FIELD_MARKER.fullmatch(line.text):
            groups.append([])
        else:
            groups[-1].append(line)
    groups = [group for group in groups if group]
    if not groups or any(len(group) != 2 for group in groups):
        return None
    for name, value in groups:
        if name.text[-1] in ".!?:;," or any(
            _ITEM.match(line.raw) or looks_like_code(line.text) for line in (name, value)
        ):
            return None
        if any(len(line.text) > 40 or len(line.text.split()) > 5 for line in (name, value)):
            return None
    return [(name, value) for name, value in groups]


def _dedent(code: str) -> str:
    lines = code.expandtabs(8).split("\n")
    margin = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[margin:] for line in lines)


def read_units(passage: str, section: str = "") -> list[Unit]:
    """The units of one passage, in order. ``section``: the heading path of the chunk (the heading of
    units above the passage's first heading)."""
    reader = _Reader(passage, lines_of(passage), heading=plain(section.split(" > ")[-1]) if section else "")
    start = _after_opening_block(reader.lines)
    reader.block(0, max(start - 1, 0))
    reader.read(start, len(reader.lines))
    return reader.units


def _after_opening_block(lines: Sequence[Line]) -> int:
    """A passage cut out of a document can begin inside a fenced block: when it holds an odd number of
    fence lines and code, not prose, comes before the first, that fence closes the block. The line after
    it, else 0."""
    fences = [index for index, line in enumerate(lines) if _FENCE.match(line.raw)]
    before = [line for line in lines[: fences[0]] if not line.blank] if len(fences) % 2 else []
    return fences[0] + 1 if before and sum(is_prose(line.text) for line in before) * 2 <= len(before) else 0

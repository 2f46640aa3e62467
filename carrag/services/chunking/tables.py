"""Markdown pipe tables, so a chunk starting in a table's body repeats its header and delimiter rows (a
row says little without its column names). The span still covers only the chunk's own part:
``chunk.text == header + text[char_start:char_end]``. A header longer than half the chunk size is not repeated.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_DELIMITER_ROW = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")


def _cells(line: str) -> int:
    return len(line.strip().strip("|").split("|"))


@dataclass(frozen=True, slots=True)
class Table:
    header: str  # the header row and the delimiter row, each ending in a newline
    body_start: int  # offset of the first character after the delimiter row
    body_end: int  # offset just after the last body row


class PipeTables:
    """The pipe tables of one text whose header can be repeated in chunks of ``size`` characters."""

    def __init__(self, text: str, size: int) -> None:
        self.text = text
        self.tables: list[Table] = []
        if "|" not in text:
            return
        lines = text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        index = 0
        while index + 1 < len(lines):
            head, delimiter = lines[index], lines[index + 1]
            if (
                "|" in head
                and _DELIMITER_ROW.fullmatch(delimiter.rstrip("\r\n"))
                and "-" in delimiter
                and _cells(head) == _cells(delimiter)
            ):
                end = index + 2
                while end < len(lines) and "|" in lines[end] and lines[end].strip():
                    end += 1
                header = head.rstrip("\r\n") + "\n" + delimiter.rstrip("\r\n") + "\n"
                if len(header) <= size // 2 and end > index + 2:
                    self.tables.append(Table(header, offsets[index + 2], offsets[end]))
                index = end
            else:
                index += 1
        self._starts = [table.body_start for table in self.tables]

    def table_at(self, position: int) -> Table | None:
        """The table whose body holds the first non-whitespace character at or after ``position``."""
        if not self.tables:
            return None
        while position < len(self.text) and self.text[position].isspace():
            position += 1
        index = bisect.bisect_right(self._starts, position) - 1
        if index >= 0 and position < self.tables[index].body_end:
            return self.tables[index]
        return None

    def header_at(self, position: int) -> str:
        """The header a chunk starting at ``position`` repeats (``""`` outside a table body)."""
        table = self.table_at(position)
        return table.header if table is not None else ""

    def row_start(self, position: int, limit: int) -> int:
        """Inside a table body, the start of the first row at or after ``position`` (before
        ``limit``, else ``limit``); elsewhere ``position``."""
        if self.table_at(position) is None or position == 0 or self.text[position - 1] == "\n":
            return position
        newline = self.text.find("\n", position, limit)
        return limit if newline == -1 else newline + 1

"""Table lines: Markdown ``| a | b |`` rows and csv rows, their cells, and rows aligned to the header."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence

from carrag.services.answers.prose import plain

TABLE_SEPARATOR = re.compile(r"^\s*(?:>\s*)*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_QUOTED_ROW = re.compile(r"^\s*(?:>\s*)+(?=\|)")  # a Markdown table inside a blockquote: "> | a | b |"


def is_table_line(line: str) -> bool:
    stripped = _QUOTED_ROW.sub("", line).strip()
    return stripped.startswith("|") and stripped.count("|") >= 2


_FIELD_COMMA = re.compile(r"(?<!\d),|,(?!\d)")


def is_csv_line(line: str) -> bool:
    """Short comma-separated fields with no sentence inside (a csv/xlsx row)."""
    stripped = line.strip()
    fields = _FIELD_COMMA.split(stripped)
    if len(fields) < 3 or ". " in stripped:
        return False
    return sum(len(field) for field in fields) / len(fields) <= 40


def column_name(cell: str) -> str:
    """A column name as a row's display reads it ("" for a placeholder such as ``-``)."""
    name = plain(cell)
    return name if any(char.isalnum() for char in name) else ""


def cells(row: str) -> list[str]:
    row = _QUOTED_ROW.sub("", row).strip()
    if row.startswith("|"):
        inner = row[1:-1] if row.endswith("|") and len(row) > 1 else row[1:]
        return [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]
    return [cell.strip().strip('"') for cell in next(csv.reader([row]), [])]


def align(names: Sequence[str], rows: Sequence[list[str]]) -> list[list[str]]:
    """Rows as ``len(names)`` cells. A row shorter than the header comes from merged cells: a data row
    is aligned right and the cells it lacks are carried down from the row above; a short row followed
    by longer rows is a group label over the leading columns."""
    width = len(names)
    if not width:
        return [list(row) for row in rows]
    filled = [""] * width
    aligned = []
    for index, row in enumerate(rows):
        if len(row) >= width:
            cells = list(row[:width])
        else:
            longer = next((len(later) for later in rows[index + 1 :] if len(later) > len(row)), None)
            if longer is not None and longer < width:
                start = max(width - longer - len(row), 0)
                cells = filled[:start] + list(row) + [""] * (width - start - len(row))
            else:
                start = width - len(row)
                cells = filled[:start] + list(row)
        filled = cells + [""] * (width - len(cells))
        aligned.append(cells)
    return aligned

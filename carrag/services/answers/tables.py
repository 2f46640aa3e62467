"""Read table rows with their column names, so a row can answer on its own.

``Flyers,PHI,2`` says little; ``Team: Flyers; Code: PHI; Stanley Cups: 2`` answers "how many cups
have the Flyers won". Rows of csv/xlsx sheets (comma-separated) and of markdown tables (``| a | b |``)
are split into cells and paired with the table's header row (its first row). The line before a
table is its title.

Rows shorter than the header come from merged cells (an HTML ``rowspan``, a pivot table): a data row
is aligned to the right-hand columns and the cells it lacks are carried down from the rows above;
a short row followed by longer rows is a group label ("2025 | Q1") over the leading columns. So
``| May | $280 | $120 |`` under ``Year | Quarter | Month | Revenue | Cost`` reads
``Year: 2025; Quarter: Q2; Month: May; Revenue: $280; Cost: $120``. An empty cell of a full row
stays empty: the row says nothing under that column. A single comma-separated line is not a table
(a sentence listing "confidentiality, integrity, and availability").
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass

from carrag.services.answers.sentences import Sentence


@dataclass(frozen=True, slots=True)
class RowReading:
    title: str  # the line before the table
    names: tuple[str, ...]  # the header row's cells
    cells: tuple[str, ...]  # this row's cells, aligned to ``names``, merged cells filled in
    is_header: bool = False

    def display(self) -> str:
        pairs = [(name, cell) for name, cell in zip(self.names, self.cells, strict=False) if cell]
        return "; ".join(f"{name}: {cell}" if name and name != cell else cell for name, cell in pairs)


def fields(row: str) -> list[str]:
    """The cells of one table line: a markdown row (``| a | b |``) or a csv line."""
    row = row.strip()
    if not row:
        return []
    if row.startswith("|"):
        inner = row[1:-1] if row.endswith("|") and len(row) > 1 else row[1:]
        return [cell.strip() for cell in inner.split("|")]
    return [cell.strip().strip('"') for cell in next(csv.reader([row]), [])]


def align(names: Sequence[str], rows: Sequence[list[str]]) -> list[tuple[str, ...]]:
    """Each row as ``len(names)`` cells: short rows placed as the module says, gaps carried down."""
    width = len(names)
    filled = [""] * width
    aligned: list[tuple[str, ...]] = []
    for index, row in enumerate(rows):
        if len(row) >= width or not width:
            cells = list(row[:width]) if width else list(row)
        else:
            longer = next((len(later) for later in rows[index + 1 :] if len(later) > len(row)), None)
            if longer is not None and longer < width:  # a group label over the leading columns
                group = width - longer
                start = max(group - len(row), 0)
                cells = filled[:start] + list(row) + [""] * (width - start - len(row))
            else:  # a data row missing its leading (merged) cells
                start = width - len(row)
                cells = filled[:start] + list(row)
        filled = cells + [""] * (width - len(cells))
        aligned.append(tuple(cells))
    return aligned


def _is_header(text: str, first: Sentence, second: Sentence | None) -> bool:
    """A table's first row is its header when the markdown ``| --- |`` separator follows it, or when
    it holds no digit and the table does not begin the passage (a passage can begin in the middle of
    a table, with a data row, or in the middle of a row: then the line before ends with the row's
    closing ``|``)."""
    if second is not None and "---" in text[first.end : second.start]:
        return True
    before = text[: first.start]
    line_before = before.rstrip(" \t").removesuffix("\n").rsplit("\n", 1)[-1].strip()
    begins_mid_row = line_before.endswith("|")  # the line right before, not a row of its own: a cut row
    return bool(before.strip()) and not begins_mid_row and not any(char.isdigit() for char in first.text)


def read_rows(text: str, sentences: Sequence[Sentence]) -> dict[Sentence, RowReading]:
    """For every table-row sentence of one passage (``text``), its reading; other sentences are not in it.
    A blank line ends a table."""
    readings: dict[Sentence, RowReading] = {}
    title = ""
    block: list[Sentence] = []

    def flush() -> None:
        if not block or (len(block) == 1 and not block[0].text.startswith("|")):
            block.clear()  # one comma-separated line alone is a sentence with commas, not a table
            return
        if _is_header(text, block[0], block[1] if len(block) > 1 else None):
            names = tuple(fields(block[0].text))
            readings[block[0]] = RowReading(title, names, names, is_header=True)
            body = block[1:]
        else:
            names, body = (), block
        for sentence, cells in zip(body, align(names, [fields(row.text) for row in body]), strict=True):
            readings[sentence] = RowReading(title, names, cells)
        block.clear()

    for sentence in sentences:
        if sentence.is_table_row:
            if block and "\n\n" in text[block[-1].end : sentence.start].replace(" ", ""):
                flush()
            block.append(sentence)
            continue
        flush()
        title = sentence.text.lstrip("#* ").removeprefix("Sheet: ")
    flush()
    return readings

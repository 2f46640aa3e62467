"""Ruled tables of a PDF page as Markdown tables (rows under their header row), instead of their cells'
words flattened into lines that lose the columns.

PyMuPDF's ``find_tables`` finds the grid from the page's ruling lines. It costs about a second per page,
so it runs only on pages drawing at least two horizontal and two vertical rules (a grid needs them),
on at most `MAX_TABLE_PAGES` such pages per document, and a table of more than `MAX_TABLE_CELLS`
cells keeps its words as text. Each cell's text is the page's words whose centre lies in the cell
(``find_tables``' own cell text drops spaces between words), in reading order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from carrag.services.parsers.markdown_table import markdown_table

MAX_TABLE_PAGES = 100  # pages of one document searched for tables
MAX_TABLE_CELLS = 2_000  # cells of one table
Rect = tuple[float, float, float, float]
Word = tuple[Any, ...]  # PyMuPDF's (x0, y0, x1, y1, text, block, line, word)


def has_grid(page: Any) -> bool:
    """Whether the page draws at least two horizontal and two vertical rules (lines or rectangle edges)."""
    horizontal = vertical = 0
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            if item[0] == "re":
                horizontal, vertical = horizontal + 2, vertical + 2
            elif item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                horizontal += abs(y0 - y1) < 1
                vertical += abs(x0 - x1) < 1
        if horizontal >= 2 and vertical >= 2:
            return True
    return False


def centre_in(area: Sequence[float], box: Rect) -> bool:
    """Whether the centre of ``area`` (a word's or a block's rectangle) lies in ``box``."""
    x, y = (area[0] + area[2]) / 2, (area[1] + area[3]) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def _cell_text(words: Sequence[Word], box: Rect | None) -> str:
    if box is None:  # a cell merged into its neighbour
        return ""
    return " ".join(word[4] for word in words if centre_in(word, box)).replace("|", "\\|")


def page_tables(page: Any, words: Sequence[Word]) -> list[tuple[Rect, str]]:
    """The page's ruled tables: each one's area and its Markdown (first row as the header)."""
    found = []
    for table in page.find_tables().tables:
        if table.row_count < 2 or table.col_count < 2 or table.row_count * table.col_count > MAX_TABLE_CELLS:
            continue
        box = tuple(table.bbox)
        inside = [word for word in words if centre_in(word, box)]
        rows = [[_cell_text(inside, cell) for cell in row.cells] for row in table.rows]
        rows = [row for row in rows if any(row)]
        if len(rows) >= 2:
            found.append((box, markdown_table(rows)))
    return found

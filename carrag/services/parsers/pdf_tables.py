"""Ruled tables of a PDF page as Markdown tables (rows under their header row), instead of their cells'
words flattened into lines that lose the columns.

PyMuPDF's ``find_tables`` finds the grid from the page's ruling lines. It costs about a second per page
and grows with the grid, so it runs only on pages drawing at least three distinct horizontal and two
distinct vertical rule positions (a page frame alone has two horizontal ones) that can make at most
`MAX_TABLE_CELLS` cells, on at most `MAX_TABLE_PAGES` such pages and `MAX_GRID_CELLS` grid cells per
document (its cost follows the cells: a 40 × 40 grid takes seconds). Reading a page's drawings has
its own cost (an XObject drawn many times multiplies it), so a document reads at most
`MAX_DRAWING_ITEMS` drawing items in all. Each cell's text is the page's words whose centre lies in the
cell (``find_tables``' own cell text drops spaces between words), in reading order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from carrag.services.parsers.markdown_table import markdown_table

MAX_TABLE_PAGES = 100  # pages of one document searched for tables
MAX_TABLE_CELLS = 2_000  # cells of one table, and of the grid a page searched can draw
MAX_GRID_CELLS = 10_000  # grid cells searched per document, all pages together
MAX_DRAWING_ITEMS = 200_000  # drawing items (lines, rectangles, curves) read per document to find grids
Rect = tuple[float, float, float, float]
Word = tuple[Any, ...]  # PyMuPDF's (x0, y0, x1, y1, text, block, line, word)


@dataclass(slots=True)
class GridSearch:
    """What one document may still spend on finding tables (pages and grid cells searched, drawing
    items read)."""

    pages: int = MAX_TABLE_PAGES
    grid_cells: int = MAX_GRID_CELLS
    drawing_items: int = MAX_DRAWING_ITEMS

    def worth_searching(self, page: Any) -> bool:
        """Whether ``page`` draws a grid small enough to search, counting what it costs the budgets."""
        if self.pages <= 0 or self.drawing_items <= 0:  # drawings are read only while both budgets last
            return False
        try:
            horizontal, vertical, read = grid_rules(page)
        except Exception:  # noqa: BLE001 - drawings MuPDF cannot read: the page keeps its plain text
            return False
        self.drawing_items -= read
        cells = (len(horizontal) - 1) * (len(vertical) - 1)  # the most a grid of these rules can make
        if len(horizontal) < 3 or len(vertical) < 2 or cells > min(MAX_TABLE_CELLS, self.grid_cells):
            return False
        self.pages -= 1
        self.grid_cells -= cells
        return True


def grid_rules(page: Any) -> tuple[set[int], set[int], int]:
    """The distinct positions (rounded to a point) of the page's horizontal and vertical rules (lines and
    rectangle edges; the ends of a thin horizontal rectangle count as vertical positions, so a table
    ruled only across by TeX is still found), and how many drawing items were read."""
    horizontal: set[int] = set()
    vertical: set[int] = set()
    read = 0
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            read += 1
            if item[0] == "re":  # a thin rectangle is one rule (TeX draws rules so), a wider one four
                x0, y0, x1, y1 = item[1]
            elif item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
            else:
                continue
            if abs(y1 - y0) < 1:
                horizontal.add(round((y0 + y1) / 2))
                if item[0] == "re":  # a rule drawn as a rectangle, as TeX does: its ends bound the table
                    vertical.update((round(x0), round(x1)))
            elif abs(x1 - x0) < 1:
                vertical.add(round((x0 + x1) / 2))
            elif item[0] == "re":
                horizontal.update((round(y0), round(y1)))
                vertical.update((round(x0), round(x1)))
    return horizontal, vertical, read


def centre_in(area: Sequence[float], box: Rect) -> bool:
    """Whether the centre of ``area`` (a word's or a block's rectangle) lies in ``box``."""
    x, y = (area[0] + area[2]) / 2, (area[1] + area[3]) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


@dataclass(slots=True, frozen=True)
class Table:
    """A ruled table: its area, its Markdown, and its words in the order the Markdown writes them."""

    box: Rect
    markdown: str
    words: tuple[Word, ...]


def page_tables(page: Any, words: Sequence[Word]) -> list[Table]:
    """The page's ruled tables (first row as the header). A word lies in a table when it lies in one
    of its cells; the others (also those in the table's area but in no cell) are not the table's."""
    found = []
    for table in page.find_tables().tables:
        if table.row_count < 2 or table.col_count < 2 or table.row_count * table.col_count > MAX_TABLE_CELLS:
            continue
        inside = [word for word in words if centre_in(word, tuple(table.bbox))]
        rows: list[list[str]] = []
        written: list[Word] = []
        for row in table.rows:
            cells = [[word for word in inside if centre_in(word, cell)] if cell else [] for cell in row.cells]
            if any(cells):
                rows.append([" ".join(word[4] for word in cell) for cell in cells])
                written.extend(word for cell in cells for word in cell)
        if len(rows) >= 2:
            found.append(Table(tuple(table.bbox), markdown_table(rows), tuple(written)))
    return found

from __future__ import annotations

import functools

import pymupdf
import pytest

from carrag.services.parsers.pdf import parse_pdf
from carrag.services.parsers.pdf_tables import MAX_TABLE_CELLS, GridSearch

ROWS = [
    ["Type", "Range", "Storage"],
    ["smallint", "-32768 to +32767", "2 bytes"],
    ["integer", "-2147483648 to +2147483647", "4 bytes"],
]


def _ruled_table_pdf(pages: int = 1, ruled: bool = True, by_column: bool = False, note: str = "") -> bytes:
    """Pages with a paragraph above a 3×3 table (ruled, or its cells' words only; its text written row by
    row or column by column), and ``note`` set tight under it, in the text object of the last row's first cell."""
    document = pymupdf.open()
    for _ in range(pages):
        page = document.new_page()
        page.insert_text((72, 60), "Numeric types hold numbers of several sizes.", fontsize=10)
        left, top, widths, height = 72, 100, (100, 200, 80), 20
        cells = [(r, c) for r in range(len(ROWS)) for c in range(len(widths))]
        for r, c in sorted(cells, key=lambda rc: rc[::-1]) if by_column else cells:
            text = f"{ROWS[r][c]}\n{note}" if note and (r, c) == (len(ROWS) - 1, 0) else ROWS[r][c]
            page.insert_text((left + sum(widths[:c]) + 4, top + r * height + 14), text, fontsize=9)
        if ruled:
            right, bottom = left + sum(widths), top + len(ROWS) * height
            for r in range(len(ROWS) + 1):
                page.draw_line((left, top + r * height), (right, top + r * height))
            x = left
            for width in (0, *widths):
                x += width
                page.draw_line((x, top), (x, bottom))
    return document.tobytes()


def test_a_ruled_table_is_read_as_rows_under_its_header() -> None:
    parsed = parse_pdf(_ruled_table_pdf(), "types.pdf")
    assert "| Type | Range | Storage |" in parsed.text
    assert "| smallint | -32768 to +32767 | 2 bytes |" in parsed.text
    assert "Numeric types hold numbers of several sizes." in parsed.text
    assert parsed.text.count("smallint") == 1  # the cells' words are not also left as flattened lines
    start = parsed.text.index("-32768")
    assert parsed.positions is not None and parsed.positions.regions(start, start + 6)  # still located on the page


def test_a_page_without_rules_is_not_searched_for_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> list[object]:
        raise AssertionError("find_tables ran on a page without a grid")

    monkeypatch.setattr("carrag.services.parsers.pdf.page_tables", refuse)
    parsed = parse_pdf(_ruled_table_pdf(ruled=False), "plain.pdf")
    assert "smallint" in parsed.text and "|" not in parsed.text


def test_tables_are_searched_on_a_bounded_number_of_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("carrag.services.parsers.pdf.GridSearch", functools.partial(GridSearch, pages=1))
    parsed = parse_pdf(_ruled_table_pdf(pages=2), "two.pdf")
    assert parsed.text.count("| smallint |") == 1 and parsed.text.count("smallint") == 2


def _spy_find_tables(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    find_tables = pymupdf.Page.find_tables

    def spy(page: pymupdf.Page, *args: object, **kwargs: object) -> object:
        calls.append(page)
        return find_tables(page, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "find_tables", spy)
    return calls


def test_tables_are_searched_within_a_document_budget_of_grid_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("carrag.services.parsers.pdf.GridSearch", functools.partial(GridSearch, grid_cells=12))
    calls = _spy_find_tables(monkeypatch)
    parsed = parse_pdf(_ruled_table_pdf(pages=2), "two.pdf")  # each page's grid: 3 × 3 cells
    assert len(calls) == 1 and parsed.text.count("| smallint |") == 1 and parsed.text.count("smallint") == 2


def test_a_failed_table_search_keeps_the_page_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("find_tables broke")

    monkeypatch.setattr(pymupdf.Page, "find_tables", fail)
    parsed = parse_pdf(_ruled_table_pdf(), "types.pdf")
    assert "smallint" in parsed.text and "Numeric types" in parsed.text and "| smallint |" not in parsed.text


def test_a_grid_of_more_cells_than_the_budget_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_find_tables(monkeypatch)
    document = pymupdf.open()
    page = document.new_page()
    rules = int(MAX_TABLE_CELLS**0.5) + 3  # (rules - 1)² cells > MAX_TABLE_CELLS
    for index in range(rules):
        page.draw_line((20, 20 + index * 15), (570, 20 + index * 15), width=0.2)
        page.draw_line((20 + index * 11, 20), (20 + index * 11, 820), width=0.2)
    page.insert_text((30, 30), "A dense grid", fontsize=6)
    parsed = parse_pdf(document.tobytes(), "grid.pdf")
    assert "A dense grid" in parsed.text and calls == []


def test_a_framed_page_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_find_tables(monkeypatch)
    document = pymupdf.open()
    page = document.new_page()
    page.draw_rect((20, 20, 575, 820))
    page.insert_text((72, 72), "Text inside a page frame.", fontsize=10)
    parsed = parse_pdf(document.tobytes(), "framed.pdf")
    assert "Text inside a page frame." in parsed.text and calls == []


def test_drawings_are_read_within_a_document_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    read: set[int] = set()  # the pages whose drawings were read (find_tables reads them too)
    get_cdrawings = pymupdf.Page.get_cdrawings

    def spy(page: pymupdf.Page, *args: object, **kwargs: object) -> object:
        read.add(page.number)
        return get_cdrawings(page, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "get_cdrawings", spy)
    monkeypatch.setattr("carrag.services.parsers.pdf.GridSearch", functools.partial(GridSearch, drawing_items=3))
    parsed = parse_pdf(_ruled_table_pdf(pages=3), "three.pdf")  # each page draws 8 rules
    assert read == {0} and parsed.text.count("smallint") == 3


def test_a_line_set_tight_under_the_table_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = parse_pdf(_ruled_table_pdf(note="Note line directly below the grid"), "note.pdf")
    assert "| smallint | -32768 to +32767 | 2 bytes |" in parsed.text
    assert "Note line directly below the grid" in parsed.text
    assert parsed.text.index("Note line") > parsed.text.index("| integer |")


def test_every_cell_of_a_table_written_column_by_column_is_located() -> None:
    parsed = parse_pdf(_ruled_table_pdf(by_column=True), "columns.pdf")
    assert "| smallint | -32768 to +32767 | 2 bytes |" in parsed.text
    assert parsed.positions is not None
    for cell in (cell for row in ROWS for cell in row):
        start = parsed.text.index(f" {cell} |")
        assert parsed.positions.regions(start + 1, start + 1 + len(cell)), cell

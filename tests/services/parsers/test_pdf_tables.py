from __future__ import annotations

import pymupdf
import pytest

from carrag.services.parsers.pdf import parse_pdf

ROWS = [
    ["Type", "Range", "Storage"],
    ["smallint", "-32768 to +32767", "2 bytes"],
    ["integer", "-2147483648 to +2147483647", "4 bytes"],
]


def _ruled_table_pdf(pages: int = 1, ruled: bool = True) -> bytes:
    """Pages with a paragraph above a 3×3 table (ruled, or its cells' words only)."""
    document = pymupdf.open()
    for _ in range(pages):
        page = document.new_page()
        page.insert_text((72, 60), "Numeric types hold numbers of several sizes.", fontsize=10)
        left, top, widths, height = 72, 100, (100, 200, 80), 20
        for r, row in enumerate(ROWS):
            x = left
            for c, cell in enumerate(row):
                page.insert_text((x + 4, top + r * height + 14), cell, fontsize=9)
                x += widths[c]
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
    monkeypatch.setattr("carrag.services.parsers.pdf.MAX_TABLE_PAGES", 1)
    parsed = parse_pdf(_ruled_table_pdf(pages=2), "two.pdf")
    assert parsed.text.count("| smallint |") == 1 and parsed.text.count("smallint") == 2

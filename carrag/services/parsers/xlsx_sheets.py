"""XLSX → text with openpyxl: each sheet with data as ``## Sheet: <title>`` and its rows as CSV (computed
values, formulas not evaluated). Sheets are streamed cell by cell as stored, so a row with one cell in
column XFD is one cell: it counts towards MAX_SHEET_CELLS up to its last non-empty cell.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import date, datetime, time
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.archive import open_office_archive
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget, too_large
from carrag.services.parsers.csv_rows import rows_to_csv
from carrag.services.parsers.optional import import_optional


def cell_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat(sep=" ")
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # Excel stores every number as a float; show 13.0 as 13, like Excel
    return str(value)


class BudgetExceeded(Exception):
    """More cells than ``MAX_SHEET_CELLS`` (turned into a 413 naming the file)."""


def stored_rows(sheet: Any) -> Iterator[list[dict[str, Any]]]:
    """The cells a read-only sheet stores, row by row, without the empty cells openpyxl's
    ``iter_rows`` would create up to each row's last column."""
    reader = import_optional("openpyxl.worksheet._reader", package="openpyxl", extension=".xlsx")
    workbook = sheet.parent
    with sheet._get_source() as source:
        parser = reader.WorkSheetParser(
            source,
            sheet._shared_strings,
            data_only=workbook.data_only,
            epoch=workbook.epoch,
            date_formats=workbook._date_formats,
            timedelta_formats=workbook._timedelta_formats,
        )
        for _, cells in parser.parse():
            yield cells


def sheet_rows(sheet: Any, cells_left: int) -> tuple[list[list[str]], int]:
    """The sheet's non-empty rows, each up to its last non-empty cell, and the cells budget left."""
    rows: list[list[str]] = []
    for cells in stored_rows(sheet):
        values = {cell["column"]: text for cell in cells if (text := cell_value(cell["value"])).strip()}
        if not values:
            continue
        width = max(values)
        cells_left -= width
        if cells_left < 0:
            raise BudgetExceeded
        rows.append([values.get(column, "") for column in range(1, width + 1)])
    return rows, cells_left


def parse_xlsx(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    openpyxl = import_optional("openpyxl", package="openpyxl", extension=".xlsx")
    load = functools.partial(openpyxl.load_workbook, read_only=True, data_only=True)
    workbook = open_office_archive(data, filename, ".xlsx", load, budget, "workbook")
    blocks: list[str] = []
    sheets: list[dict[str, Any]] = []
    cells_left = budget.max_sheet_cells
    try:
        for sheet in workbook.worksheets:
            if not hasattr(sheet, "_get_source"):
                continue  # a chartsheet has no cells
            rows, cells_left = sheet_rows(sheet, cells_left)
            sheets.append({"title": sheet.title, "row_count": len(rows)})
            if rows:
                blocks.append(f"## Sheet: {sheet.title}\n\n{rows_to_csv(rows)}")
        title = (workbook.properties.title or "").strip() or None
    except BudgetExceeded:
        raise too_large(
            filename, f"holds more than {budget.max_sheet_cells:,} cells", budget.max_sheet_cells, "MAX_SHEET_CELLS"
        ) from None
    except Exception as exc:
        raise InvalidInput(f"{filename}: a worksheet cannot be read ({exc}).") from exc
    finally:
        workbook.close()
    return ParsedDocument(
        text="\n\n".join(blocks),
        filename=filename,
        source_type="xlsx",
        metadata={
            "sheet_count": len(sheets),
            "row_count": sum(sheet["row_count"] for sheet in sheets),
            "sheets": sheets,
            "title": title,
        },
        title=title,
    )

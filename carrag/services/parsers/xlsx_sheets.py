"""XLSX → text with openpyxl (seed 000: "sheets as CSV with sheet title headers").

Each worksheet that has data becomes ``## Sheet: <title>`` followed by its rows as CSV (the same
writer as .csv files), so the `markdown` chunking strategy keeps the sheet name on every chunk.
Cells are read as their last computed values (formulas are not evaluated); empty rows and
trailing empty cells are dropped. The workbook is streamed in read-only mode.
"""

from __future__ import annotations

import io
from datetime import date, datetime, time
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.archive import check_office_archive
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


def sheet_rows(sheet: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for raw in sheet.iter_rows(values_only=True):
        values = [cell_value(value) for value in raw]
        while values and not values[-1].strip():
            values.pop()
        if values:
            rows.append(values)
    return rows


def parse_xlsx(data: bytes, filename: str) -> ParsedDocument:
    openpyxl = import_optional("openpyxl", package="openpyxl", extension=".xlsx")
    check_office_archive(data, filename, ".xlsx")
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for damaged workbooks
        raise InvalidInput(f"{filename} is not a readable .xlsx workbook ({exc}).") from exc
    blocks: list[str] = []
    sheets: list[dict[str, Any]] = []
    try:
        for sheet in workbook.worksheets:
            if not hasattr(sheet, "iter_rows"):
                continue  # a chartsheet has no cells
            if hasattr(sheet, "reset_dimensions"):
                sheet.reset_dimensions()  # the stored dimensions may be wrong; read every row present
            rows = sheet_rows(sheet)
            sheets.append({"title": sheet.title, "row_count": len(rows)})
            if rows:
                blocks.append(f"## Sheet: {sheet.title}\n\n{rows_to_csv(rows)}")
        title = (workbook.properties.title or "").strip() or None
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

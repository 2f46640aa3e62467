from __future__ import annotations

import pytest

from carrag.services.errors import InvalidInput, NoExtractableText
from carrag.services.parsers import parse_file
from tests.services.parsers.formats import REAL, fixture_bytes


def test_each_sheet_as_csv_under_its_title() -> None:
    parsed = parse_file(fixture_bytes("service_log.xlsx"), "service_log.xlsx")
    assert parsed.source_type == "xlsx"
    assert parsed.title == "Aurora T-200 Service Log"
    assert parsed.text == (
        "## Sheet: Services\n\n"
        "Date,Odometer km,Work done,Cost EUR\n"
        '2024-03-02,512,"First inspection, spokes trued",0\n'
        '2024-09-14,3120,"Chain replaced, brakes bled",89.5\n'
        '2025-02-01 09:30:00,5230,"Tyres replaced, ""tubeless"" setup",131\n\n'
        "## Sheet: Parts used\n\n"
        "Part number,Quantity,In warranty\n"
        "CH-0421,1,FALSE\n"
        "TY-2750,2,TRUE"
    )
    assert parsed.metadata["sheet_count"] == 3 and parsed.metadata["row_count"] == 7
    assert parsed.metadata["sheets"][2] == {"title": "Empty sheet", "row_count": 0}


def test_real_workbook() -> None:
    parsed = parse_file((REAL / "stanley-cups.xlsx").read_bytes(), "stanley-cups.xlsx")
    assert parsed.text.startswith("## Sheet: Stanley Cups\n\nStanley Cups\nTeam,Location,Stanley Cups\n")
    assert "Maple Leafs,TOR,13" in parsed.text and "## Sheet: Stanley Cups Since 67" in parsed.text
    assert parsed.metadata["sheet_count"] == 2


def test_workbook_without_values_has_no_text() -> None:
    import io

    import openpyxl

    buffer = io.BytesIO()
    openpyxl.Workbook().save(buffer)
    with pytest.raises(NoExtractableText):
        parse_file(buffer.getvalue(), "empty.xlsx")


def test_damaged_workbooks_are_clear_400s() -> None:
    with pytest.raises(InvalidInput, match="not a readable .xlsx file"):
        parse_file(b"definitely not a workbook", "junk.xlsx")
    with pytest.raises(InvalidInput, match="password-protected"):
        parse_file(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512, "locked.xlsx")
    docx_named_xlsx = fixture_bytes("workshop_notes.docx")
    with pytest.raises(InvalidInput, match="not a readable .xlsx workbook"):
        parse_file(docx_named_xlsx, "renamed.xlsx")

"""Every parser reads within a budget (issue 25 rows 2-9): one test per hostile file, each checking
the answer, the time and the memory the parse took, measured in a child process
(`carrag/bench/hostile_inputs.py`, which also prints the numbers). The OCR rows' bound is the OCR
working set: text detection runs on at most 1600 pixels a side, about 650 MB whatever the page
(docs/security.md, "Parser budgets").
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from carrag.bench import hostile_inputs as hostile
from carrag.bench.hostile_inputs import parse_in_child
from carrag.services.errors import PayloadTooLarge
from carrag.services.parsers import parse_file
from carrag.services.parsers.budget import ParseBudget
from carrag.services.parsers.pdf_ocr import ocr_available

PARSE_BOUND_MB = 300  # above the process before the parse (docs/security.md)
OCR_BOUND_MB = 800


needs_ocr = pytest.mark.skipif(not ocr_available(), reason="rapidocr-onnxruntime is not installed")


@pytest.mark.slow
@needs_ocr
def test_row2_a_huge_blank_page_is_rendered_within_the_pixel_budget(tmp_path: Path) -> None:
    """3000 × 3000 pt at 300 dpi would be 156 million pixels; it is rendered at 107 dpi instead."""
    result = parse_in_child(tmp_path, "page.pdf", hostile.pdf_with_a_huge_page(), ocr=True)
    assert result["error"] == "NoExtractableText", result
    assert result["growth_mb"] < OCR_BOUND_MB and result["seconds"] < 120, result


@needs_ocr
def test_row3_an_image_too_large_to_decode_is_refused_before_rendering(tmp_path: Path) -> None:
    result = parse_in_child(tmp_path, "image.pdf", hostile.pdf_with_a_huge_image(), ocr=True)
    assert result["error"] == "PayloadTooLarge", result
    assert "20,000 × 20,000 pixels" in result["message"] and "MAX_IMAGE_PIXELS" in result["message"]
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row4_a_zip_bomb_is_refused_by_what_it_inflates_to(tmp_path: Path) -> None:
    """The members declare 2 KB and inflate to 400 MB: read in pieces, refused at the first bad one."""
    result = parse_in_child(tmp_path, "bomb.xlsx", hostile.xlsx_zip_bomb(members=1))
    assert result["error"] == "InvalidInput" and "Bad CRC" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row4_an_archive_inflating_past_the_budget_is_413_naming_the_setting() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", b"A" * 8 * 1024 * 1024)  # honest sizes, too many bytes
    with pytest.raises(PayloadTooLarge, match=r"inflates to more than 4,194,304 bytes.*\(MAX_ARCHIVE_BYTES\)"):
        parse_file(buffer.getvalue(), "big.xlsx", budget=ParseBudget(max_archive_bytes=4 * 1024 * 1024))


def test_row4_an_honest_archive_with_too_much_xml_is_refused_before_its_library_parses_it(tmp_path: Path) -> None:
    result = parse_in_child(tmp_path, "much-xml.docx", hostile.docx_with_much_xml())
    assert result["error"] == "PayloadTooLarge" and "MAX_MARKUP_BYTES" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row5_far_away_cells_are_counted_before_the_text_is_built(tmp_path: Path) -> None:
    result = parse_in_child(tmp_path, "far.xlsx", hostile.xlsx_with_far_cells())
    assert result["error"] == "PayloadTooLarge" and "MAX_SHEET_CELLS" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row5_a_few_far_cells_within_the_budget_are_read() -> None:
    parsed = parse_file(hostile.xlsx_with_far_cells(rows=3), "far.xlsx")
    assert parsed.text.count("far ") == 3


def test_row6_an_element_with_a_million_attributes_is_refused_before_parsing(tmp_path: Path) -> None:
    result = parse_in_child(tmp_path, "attributes.html", hostile.html_with_many_attributes())
    assert result["error"] == "PayloadTooLarge" and "MAX_HTML_ATTRIBUTES" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row6_too_many_elements_is_413() -> None:
    page = b"<html><body>" + b"<span>x</span>" * 2000 + b"</body></html>"
    with pytest.raises(PayloadTooLarge, match="MAX_HTML_ELEMENTS"):
        parse_file(page, "many.html", budget=ParseBudget(max_html_elements=1000))


@pytest.mark.parametrize(
    "builder", [hostile.eml_nested_messages, hostile.eml_nested_multiparts], ids=["rfc822", "multipart"]
)
def test_row7_mime_nesting_is_refused_before_the_recursive_parser(tmp_path: Path, builder) -> None:
    result = parse_in_child(tmp_path, "deep.eml", builder())
    assert result["error"] == "InvalidInput" and "MAX_EMAIL_NESTING" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row7_nesting_within_the_limit_is_read() -> None:
    parsed = parse_file(hostile.eml_nested_multiparts(depth=5), "five.eml")
    assert "inner text" in parsed.text


def test_row8_a_page_count_that_lies_is_400(tmp_path: Path) -> None:
    result = parse_in_child(tmp_path, "lying.pdf", hostile.pdf_whose_page_count_lies())
    assert result["error"] == "InvalidInput" and "page tree is damaged" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result


def test_row9_lone_surrogates_in_json_become_replacement_characters() -> None:
    parsed = parse_file(hostile.json_with_lone_surrogates(), "broken.json")
    assert "broken \ufffd pair" in parsed.text and "fine \U0001f600" in parsed.text
    parsed.text.encode("utf-8")  # storable


@needs_ocr
@pytest.mark.parametrize("side", [8000, 20_000])
def test_a_picture_larger_than_the_budget_is_refused_before_decoding(tmp_path: Path, side: int) -> None:
    result = parse_in_child(tmp_path, "huge.png", hostile.png(side, side), ocr=True)
    assert result["error"] == "PayloadTooLarge" and "MAX_IMAGE_PIXELS" in result["message"], result
    assert result["growth_mb"] < PARSE_BOUND_MB and result["seconds"] < 10, result

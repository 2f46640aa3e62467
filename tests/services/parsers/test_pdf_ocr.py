"""OCR of scanned pages (issue 13 item 4): real scans made from text PDFs of the corpus."""

from __future__ import annotations

import pymupdf
import pytest

from carrag.bench.html_extraction import token_f1, tokens
from carrag.bench.ocr import scanned_copy
from carrag.services.errors import NoExtractableText
from carrag.services.parsers import parse_file
from carrag.services.parsers.pdf_ocr import TextBox, boxes_to_text, ocr_available, reader_for
from tests.services.parsers.formats import REAL

needs_ocr = pytest.mark.skipif(not ocr_available(), reason="rapidocr-onnxruntime is not installed")


def test_boxes_become_lines_and_paragraphs() -> None:
    boxes = [
        TextBox(top=10, bottom=20, left=60, right=110, text="world"),
        TextBox(top=11, bottom=21, left=0, right=50, text="Hello"),
        TextBox(top=24, bottom=34, left=0, right=120, text="second line"),
        TextBox(top=80, bottom=90, left=0, right=130, text="New paragraph"),
    ]
    assert boxes_to_text(boxes) == "Hello world\nsecond line\n\nNew paragraph"
    assert boxes_to_text([]) == ""


def test_ocr_can_be_turned_off() -> None:
    assert reader_for(False) is None
    assert (reader_for(True) is not None) == ocr_available()


def test_scanned_pdf_without_ocr_says_why_it_has_no_text() -> None:
    scan, _ = scanned_copy((REAL / "fake-memo.pdf").read_bytes(), pages=1, dpi=50)
    with pytest.raises(NoExtractableText, match="OCR is off or not installed"):
        parse_file(scan, "scan.pdf")


@needs_ocr
def test_blank_pages_are_not_sent_to_the_engine() -> None:
    with pymupdf.open() as document:
        page = document.new_page()
        assert reader_for(True)(page, None).text == ""  # type: ignore[misc]


@needs_ocr
@pytest.mark.slow
def test_a_scanned_memo_reads_like_its_text_layer() -> None:
    scan, original = scanned_copy((REAL / "fake-memo.pdf").read_bytes(), pages=1)
    parsed = parse_file(scan, "scanned-memo.pdf", ocr=reader_for(True))
    assert parsed.metadata["ocr_pages"] == [1] and parsed.metadata["pages_with_text"] == 1
    assert token_f1(tokens(parsed.text), tokens(original)) >= 0.8, parsed.text
    assert "20,000 bottles of water" in parsed.text


@needs_ocr
@pytest.mark.slow
def test_garbage_blocks_are_read_by_ocr() -> None:
    parsed = parse_file((REAL / "redp5110_sampled-page3.pdf").read_bytes(), "redp5110.pdf", ocr=reader_for(True))
    assert parsed.metadata["ocr_spans"] >= 5 and parsed.metadata["ocr_pages"] == []
    assert "database" in parsed.text.lower().split("highlights")[-1]
    assert "èÜ•" not in parsed.text

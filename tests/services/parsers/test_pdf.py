from __future__ import annotations

import pytest

from carrag.services.errors import InvalidInput, NoExtractableText
from carrag.services.parsers import parse_file
from carrag.services.parsers.budget import ParseBudget
from carrag.services.parsers.pdf import parse_pdf
from tests.conftest import FIXTURES


def test_pages_without_text_are_skipped(manual_pdf: bytes) -> None:
    parsed = parse_pdf(manual_pdf, "2019_Ford_F150_Owners_Manual.pdf")
    assert parsed.metadata == {
        "total_pages": 4,
        "pages_with_text": 3,
        "hyphen_joins": 0,
        "garbage_pages": [],
        "garbage_spans_dropped": 0,
    }
    assert [span.page for span in parsed.page_spans] == [1, 3, 4]
    assert "FL-500S" in parsed.text and "35 psi" in parsed.text
    for span in parsed.page_spans:
        assert parsed.text[span.start : span.end].strip()
    # pages are joined by one blank line
    first, second = parsed.page_spans[:2]
    assert parsed.text[first.end : second.start] == "\n\n"
    assert parsed.title == "2019 Ford F-150 Owner's Manual"


def test_encrypted_pdf_is_refused() -> None:
    with pytest.raises(InvalidInput, match="encrypted"):
        parse_pdf((FIXTURES / "encrypted.pdf").read_bytes(), "encrypted.pdf")


def test_blank_pdf_has_no_text() -> None:
    with pytest.raises(NoExtractableText, match="no extractable text"):
        parse_pdf((FIXTURES / "scanned_blank.pdf").read_bytes(), "scanned_blank.pdf")


def test_truncated_pdf_is_repaired_and_flagged() -> None:
    parsed = parse_file((FIXTURES / "truncated.pdf").read_bytes(), "truncated.pdf")
    assert parsed.metadata["repaired"] is True
    assert "Ford F-150" in parsed.text


def test_garbage_named_pdf_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="not a readable PDF"):
        parse_file(b"this is not a pdf at all", "fake.pdf")


def test_many_blank_pages_keep_the_real_page_number() -> None:
    parsed = parse_pdf((FIXTURES / "many_blank_pages.pdf").read_bytes(), "many.pdf")
    assert parsed.metadata["total_pages"] == 2001 and parsed.metadata["pages_with_text"] == 1
    assert parsed.page_spans[0].page == 2001


def test_page_limit() -> None:
    with pytest.raises(InvalidInput, match="MAX_PDF_PAGES"):
        parse_pdf((FIXTURES / "many_blank_pages.pdf").read_bytes(), "many.pdf", budget=ParseBudget(max_pdf_pages=100))

from __future__ import annotations

import pytest

from carrag.services.chunking import chunk_document
from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file
from carrag.services.parsers.budget import ParseBudget
from tests.conftest import FIXTURES


def test_markdown_mode_keeps_pages_and_finds_headings(manual_pdf: bytes) -> None:
    text_mode = parse_file(manual_pdf, "manual.pdf")
    parsed = parse_file(manual_pdf, "manual.pdf", pdf_mode="markdown")
    assert parsed.source_type == "pdf" and parsed.title == "2019 Ford F-150 Owner's Manual"
    assert parsed.metadata == {
        "total_pages": 4,
        "pages_with_text": 3,
        "pdf_mode": "markdown",
        "hyphen_joins": 0,
        "garbage_pages": [],
        "garbage_spans_dropped": 0,
    }
    assert [span.page for span in parsed.page_spans] == [1, 3, 4] == [s.page for s in text_mode.page_spans]
    for span in parsed.page_spans:
        page_text = parsed.text[span.start : span.end]
        assert page_text == page_text.strip() and page_text
    first, second, third = (parsed.text[s.start : s.end] for s in parsed.page_spans)
    assert "# Engine oil" in first and "FL-500S" in first
    assert "35 psi" in second and "13,200 pounds" in third

    chunks = chunk_document(parsed, "markdown", 300, 50)
    assert any(c.section == "Engine oil" and c.pages == [1] for c in chunks)
    assert {page for c in chunks for page in c.pages} == {1, 3, 4}


def test_markdown_mode_refuses_what_text_mode_refuses() -> None:
    with pytest.raises(InvalidInput, match="encrypted"):
        parse_file((FIXTURES / "encrypted.pdf").read_bytes(), "encrypted.pdf", pdf_mode="markdown")
    with pytest.raises(InvalidInput, match="MAX_PDF_PAGES"):
        parse_file(
            (FIXTURES / "many_blank_pages.pdf").read_bytes(),
            "many.pdf",
            budget=ParseBudget(max_pdf_pages=10),
            pdf_mode="markdown",
        )
    with pytest.raises(InvalidInput, match="no extractable text"):
        parse_file((FIXTURES / "scanned_blank.pdf").read_bytes(), "blank.pdf", pdf_mode="markdown")

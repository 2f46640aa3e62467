"""PDF → Markdown with pymupdf4llm (``PDF_MODE=markdown``; seed 000 "PDF → Markdown").

Headings, lists and tables come out as Markdown, which the `markdown` chunking strategy can split
on. It is several times slower than plain text extraction (a layout analysis per page), so it is
opt-in. The conversion runs page by page (``page_chunks=True``), so each page's span in the joined
text is still known exactly and chunks keep their page numbers, as in text mode. The same text
hygiene as in text mode applies, with paragraphs as the spans judged for garbage, and pages without
usable text go to the OCR reader when one is given (pymupdf4llm's own OCR is not used). The words of
each page's text layer are located in its Markdown like in text mode (`pdf_positions.py`).
"""

from __future__ import annotations

import re

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.optional import import_optional
from carrag.services.parsers.pdf import (
    PageReader,
    Progress,
    TextSpan,
    clean_pages,
    join_pages,
    open_pdf,
    page_positions,
    pdf_document,
)
from carrag.services.parsers.pdf_positions import after_blocks, page_words

_PARAGRAPH_END = re.compile(r"(?<=\n\n)")


def _page_number(page: dict, index: int) -> int:
    metadata = page.get("metadata") or {}
    return int(metadata.get("page_number") or metadata.get("page") or index + 1)  # key differs by version


def parse_pdf_markdown(
    data: bytes,
    filename: str,
    *,
    budget: ParseBudget = DEFAULT_BUDGET,
    ocr: PageReader | None = None,
    on_progress: Progress | None = None,
) -> ParsedDocument:
    pymupdf4llm = import_optional("pymupdf4llm", package="pymupdf4llm", extension=".pdf (PDF_MODE=markdown)")
    with open_pdf(data, filename, budget.max_pdf_pages) as document:
        try:
            pages = pymupdf4llm.to_markdown(document, page_chunks=True, use_ocr=False, show_progress=False)
        except Exception as exc:  # the layout analysis can fail on unusual files
            raise InvalidInput(f"{filename} cannot be converted to Markdown ({exc}); try PDF_MODE=text.") from exc
        paragraphs = [
            (_page_number(page, index), [TextSpan(part) for part in _PARAGRAPH_END.split(page["text"].strip())])
            for index, page in enumerate(pages)
        ]
        cleaned, hygiene = clean_pages(document, paragraphs, ocr, on_progress, filename)
        for page in cleaned:
            if page.text.strip() and page.number not in hygiene.ocr_pages:
                words = page_words(document[page.number - 1])
                page.pieces = words + after_blocks(words, page.pieces)
        text, spans = join_pages((page.number, page.text.strip()) for page in cleaned)
        positions = page_positions(text, spans, cleaned)
        return pdf_document(text, spans, filename, document, {"pdf_mode": "markdown"}, hygiene, positions)

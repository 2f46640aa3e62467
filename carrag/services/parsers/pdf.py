"""PDF → text with PyMuPDF (seed 001 step 2): one text block per page that has text, pages joined by
a blank line, and the offset span of every page kept so chunks know their page numbers.

A damaged file that PyMuPDF can repair (e.g. truncated) is accepted with ``metadata.repaired =
true`` and whatever text survived; one it cannot open is refused with 400."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from carrag.services.errors import InvalidInput, NoExtractableText
from carrag.services.models import PageSpan, ParsedDocument

PAGE_SEPARATOR = "\n\n"


def open_pdf(data: bytes, filename: str, max_pages: int) -> Any:
    """An open `pymupdf.Document` (use it in a ``with`` block), refused if unreadable, encrypted or too long."""
    import pymupdf

    try:
        document = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types for damaged files
        raise InvalidInput(f"{filename} is not a readable PDF ({exc}).") from exc
    if document.needs_pass:
        document.close()
        raise InvalidInput(f"{filename} is encrypted; upload a copy without a password.")
    if document.page_count > max_pages:
        total_pages = document.page_count
        document.close()
        raise InvalidInput(f"{filename} has {total_pages} pages; the limit is {max_pages} (MAX_PDF_PAGES).")
    return document


def join_pages(pages: Iterable[tuple[int, str]]) -> tuple[str, list[PageSpan]]:
    """Join ``(page_number, text)`` pairs that have text with `PAGE_SEPARATOR`, recording each page's span."""
    parts: list[str] = []
    spans: list[PageSpan] = []
    position = 0
    for page_number, page_text in pages:
        if not page_text.strip():
            continue
        if parts:
            position += len(PAGE_SEPARATOR)
        spans.append(PageSpan(page=page_number, start=position, end=position + len(page_text)))
        parts.append(page_text)
        position += len(page_text)
    return PAGE_SEPARATOR.join(parts), spans


def pdf_document(
    text: str, spans: list[PageSpan], filename: str, document: Any, extra: dict[str, Any] | None = None
) -> ParsedDocument:
    if not spans:
        raise NoExtractableText(
            f"{filename} contains no extractable text (scanned or blank pages; OCR is not supported)."
        )
    metadata: dict[str, Any] = {"total_pages": document.page_count, "pages_with_text": len(spans)}
    if document.is_repaired:
        metadata["repaired"] = True
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="pdf",
        metadata=metadata | (extra or {}),
        page_spans=spans,
        title=(document.metadata or {}).get("title") or None,
    )


def parse_pdf(data: bytes, filename: str, *, max_pages: int = 5000) -> ParsedDocument:
    with open_pdf(data, filename, max_pages) as document:

        def page_texts() -> Iterable[tuple[int, str]]:
            for index in range(document.page_count):
                try:
                    yield index + 1, document[index].get_text().rstrip()
                except Exception as exc:
                    raise InvalidInput(f"{filename}: page {index + 1} cannot be read ({exc}).") from exc

        text, spans = join_pages(page_texts())
        return pdf_document(text, spans, filename, document)

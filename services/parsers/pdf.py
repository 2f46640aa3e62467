"""PDF → text with PyMuPDF (seed 001 step 2): one text block per page that has text, pages joined by
a blank line, and the offset span of every page kept so chunks know their page numbers.

A damaged file that PyMuPDF can repair (e.g. truncated) is accepted with ``metadata.repaired =
true`` and whatever text survived; one it cannot open is refused with 400."""

from __future__ import annotations

from services.errors import InvalidInput, NoExtractableText
from services.models import PageSpan, ParsedDocument

PAGE_SEPARATOR = "\n\n"


def parse_pdf(data: bytes, filename: str, *, max_pages: int = 5000) -> ParsedDocument:
    import pymupdf

    try:
        document = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types for damaged files
        raise InvalidInput(f"{filename} is not a readable PDF ({exc}).") from exc
    with document:
        if document.needs_pass:
            raise InvalidInput(f"{filename} is encrypted; upload a copy without a password.")
        total_pages = document.page_count
        if total_pages > max_pages:
            raise InvalidInput(
                f"{filename} has {total_pages} pages; the limit is {max_pages} (MAX_PDF_PAGES)."
            )
        parts: list[str] = []
        spans: list[PageSpan] = []
        position = 0
        for page_number in range(total_pages):
            try:
                page_text = document[page_number].get_text().rstrip()
            except Exception as exc:
                raise InvalidInput(f"{filename}: page {page_number + 1} cannot be read ({exc}).") from exc
            if not page_text.strip():
                continue
            if parts:
                position += len(PAGE_SEPARATOR)
            spans.append(PageSpan(page=page_number + 1, start=position, end=position + len(page_text)))
            parts.append(page_text)
            position += len(page_text)
        title = (document.metadata or {}).get("title") or None
        repaired = bool(document.is_repaired)
    if not parts:
        raise NoExtractableText(
            f"{filename} contains no extractable text (scanned or blank pages; OCR is not supported)."
        )
    return ParsedDocument(
        text=PAGE_SEPARATOR.join(parts),
        filename=filename,
        source_type="pdf",
        metadata={"total_pages": total_pages, "pages_with_text": len(spans)} | ({"repaired": True} if repaired else {}),
        page_spans=spans,
        title=title,
    )

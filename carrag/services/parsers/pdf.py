"""PDF → text with PyMuPDF (seed 001 step 2): one text block per page that has text, pages joined by
a blank line, and the offset span of every page kept so chunks know their page numbers.

Text hygiene (`pdf_text_quality.py`): spans of glyph garbage are dropped, a page whose text is
mostly garbage counts as a page without text, spacing accents are joined to their letters and the
text NFKC-normalised (ligatures), and line-break hyphens are joined. When an OCR
reader is given (`pdf_ocr.py`, ``OCR_ENABLED``), pages without usable text are read by OCR, and so
is the area of each garbage block on other pages. The document's metadata reports all of it:
``hyphen_joins``, ``garbage_pages``, ``garbage_spans_dropped``, ``ocr_pages``, ``ocr_spans``.

Each page's words (and the boxes OCR read) are located in the final text (`pdf_positions.py`), so
the document carries where its text is drawn (`ParsedDocument.positions`) and each chunk where it is
(`Chunk.regions`); the text itself is the same with or without them.

A damaged file that PyMuPDF can repair (e.g. truncated) is accepted with ``metadata.repaired =
true`` and whatever text survived; one it cannot open is refused with 400."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from carrag.services.errors import InvalidInput, NoExtractableText, PayloadTooLarge
from carrag.services.models import PageSpan, ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.pdf_positions import Piece, after_blocks, locate, text_layer_pieces
from carrag.services.parsers.pdf_tables import GridSearch, Table, page_tables
from carrag.services.parsers.pdf_text_quality import (
    document_vocabulary,
    is_garbage,
    join_hyphenated_breaks,
    normalise_text,
)
from carrag.services.positions import TextPositions

PAGE_SEPARATOR = "\n\n"
GARBAGE_PAGE_SHARE = 0.5  # a page with at least this share of garbage characters counts as without text

Rect = tuple[float, float, float, float]
Progress = Callable[[int, int], None]  # (pages done, pages to do)


@dataclass(slots=True, frozen=True)
class PlacedText:
    """Text read by OCR from a page, with the boxes it was read from (in the order of the text)."""

    text: str
    pieces: tuple[Piece, ...] = ()


PageReader = Callable[[Any, Rect | None], PlacedText]  # (pymupdf.Page, area or None for all) -> its text by OCR


class OcrReader(Protocol):
    """Reads text by OCR: a PDF page or an area of it (a `PageReader`), or a picture."""

    def __call__(self, page: Any, area: Rect | None, /) -> PlacedText: ...

    def picture(self, image: Any, /) -> str: ...  # an H×W×3 BGR array


def open_pdf(data: bytes, filename: str, max_pages: int) -> Any:
    """An open `pymupdf.Document` (use it in a ``with`` block), refused if unreadable, encrypted or too
    long. A page tree that cannot be counted (a ``/Count`` that lies) is unreadable."""
    import pymupdf

    try:
        document = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types for damaged files
        raise InvalidInput(f"{filename} is not a readable PDF ({exc}).") from exc
    try:
        if document.needs_pass:
            raise InvalidInput(f"{filename} is encrypted; upload a copy without a password.")
        try:
            total_pages = document.page_count
        except Exception as exc:  # e.g. "code=7: Invalid number of pages"
            raise InvalidInput(f"{filename} is not a readable PDF: its page tree is damaged ({exc}).") from exc
        if total_pages > max_pages:
            raise InvalidInput(f"{filename} has {total_pages} pages; the limit is {max_pages} (MAX_PDF_PAGES).")
    except InvalidInput:
        document.close()
        raise
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


@dataclass(slots=True, frozen=True)
class TextSpan:
    """A block (text mode) or paragraph (Markdown mode) of a page, with its area and words when known."""

    text: str
    area: Rect | None = None
    pieces: tuple[Piece, ...] = ()


@dataclass(slots=True)
class PageHygiene:
    """What `clean_pages` did to a document's pages, for its metadata."""

    hyphen_joins: int = 0
    garbage_pages: list[int] = field(default_factory=list)
    garbage_spans_dropped: int = 0
    ocr_pages: list[int] = field(default_factory=list)
    ocr_spans: int = 0
    ocr_seconds: float = 0.0
    ocr_enabled: bool = False

    def metadata(self) -> dict[str, Any]:
        figures: dict[str, Any] = {
            "hyphen_joins": self.hyphen_joins,
            "garbage_pages": self.garbage_pages,
            "garbage_spans_dropped": self.garbage_spans_dropped,
        }
        if self.ocr_enabled:
            figures |= {
                "ocr_pages": self.ocr_pages,
                "ocr_spans": self.ocr_spans,
                "ocr_seconds": round(self.ocr_seconds, 2),
            }
        return figures


def _visible_chars(text: str) -> int:
    return len("".join(text.split()))


@dataclass(slots=True)
class CleanPage:
    number: int
    text: str
    garbage_areas: list[Rect] = field(default_factory=list)  # garbage blocks with a known area (read by OCR)
    pieces: list[Piece] = field(default_factory=list)  # the words (or OCR boxes) of its text, in order


def usable_text(number: int, spans: Sequence[TextSpan]) -> tuple[CleanPage, int, bool]:
    """A page's spans without the garbage ones: ``(page, spans dropped, page is garbage)``; a
    garbage page's text is empty."""
    kept: list[str] = []
    areas: list[Rect] = []
    pieces: list[Piece] = []
    garbage_chars = total_chars = dropped = 0
    for span in spans:
        chars = _visible_chars(span.text)
        total_chars += chars
        if is_garbage(span.text):
            garbage_chars += chars
            dropped += 1
            if span.area is not None and chars:
                areas.append(span.area)
        else:
            kept.append(span.text)
            pieces.extend(span.pieces)
    garbage_page = bool(total_chars) and garbage_chars / total_chars >= GARBAGE_PAGE_SHARE
    if garbage_page:
        return CleanPage(number, ""), dropped, True
    return CleanPage(number, "".join(kept).rstrip(), areas, pieces), dropped, False


def read_by_ocr(
    document: Any, pages: list[CleanPage], ocr: PageReader, on_progress: Progress | None, filename: str
) -> PageHygiene:
    """Pages without text get their OCR text; garbage areas of other pages get theirs appended.
    ``on_progress(pages done, pages to read)`` is called as each page starts, and once at the end."""
    hygiene = PageHygiene(ocr_enabled=True)
    todo = [page for page in pages if not page.text.strip() or page.garbage_areas]
    started = time.perf_counter()
    for done, page in enumerate(todo):
        if on_progress is not None:
            on_progress(done, len(todo))
        try:
            pdf_page = document[page.number - 1]
            if not page.text.strip():
                read = ocr(pdf_page, None)
                page.text, page.pieces = read.text.rstrip(), list(read.pieces)
                if page.text.strip():
                    hygiene.ocr_pages.append(page.number)
            else:
                recovered: list[str] = []
                for area in page.garbage_areas:
                    read = ocr(pdf_page, area)
                    if read.text.strip():
                        recovered.append(read.text.strip())
                        page.pieces += after_blocks(page.pieces, read.pieces)
                hygiene.ocr_spans += len(recovered)
                page.text = "\n\n".join([page.text, *recovered])
        except (InvalidInput, PayloadTooLarge) as exc:
            raise type(exc)(f"{filename}: {exc.message}") from exc
        except Exception as exc:  # MuPDF cannot render the page
            raise InvalidInput(f"{filename}: page {page.number} cannot be rendered for OCR ({exc}).") from exc
    if on_progress is not None and todo:
        on_progress(len(todo), len(todo))
    hygiene.ocr_seconds = time.perf_counter() - started
    return hygiene


def clean_pages(
    document: Any,
    pages: Sequence[tuple[int, Sequence[TextSpan]]],
    ocr: PageReader | None = None,
    on_progress: Progress | None = None,
    filename: str = "the PDF",
) -> tuple[list[CleanPage], PageHygiene]:
    """``(page_number, spans)`` → pages with garbage dropped, pages without usable text (and garbage
    areas) read by ``ocr`` when given, accents composed and NFKC applied, and line-break hyphens
    joined; each with the pieces its text came from."""
    cleaned: list[CleanPage] = []
    garbage_pages: list[int] = []
    dropped_total = 0
    for number, spans in pages:
        page, dropped, garbage_page = usable_text(number, spans)
        dropped_total += dropped
        if garbage_page:
            garbage_pages.append(number)
        cleaned.append(page)
    hygiene = read_by_ocr(document, cleaned, ocr, on_progress, filename) if ocr is not None else PageHygiene()
    hygiene.garbage_pages, hygiene.garbage_spans_dropped = garbage_pages, dropped_total
    for page in cleaned:
        page.text = normalise_text(page.text)
    vocabulary = document_vocabulary(page.text for page in cleaned)
    for page in cleaned:
        page.text, count = join_hyphenated_breaks(page.text, vocabulary)
        hygiene.hyphen_joins += count
    return cleaned, hygiene


def page_positions(text: str, spans: Sequence[PageSpan], pages: Sequence[CleanPage]) -> TextPositions:
    """Where the pieces of each page with text lie in the document text (`pdf_positions.locate`)."""
    positions = TextPositions()
    pieces = {page.number: page.pieces for page in pages}
    for span in spans:
        locate(positions, span.page, span.start, text[span.start : span.end], pieces.get(span.page, ()))
    return positions


def pdf_document(
    text: str,
    spans: list[PageSpan],
    filename: str,
    document: Any,
    extra: dict[str, Any] | None = None,
    hygiene: PageHygiene | None = None,
    positions: TextPositions | None = None,
) -> ParsedDocument:
    if not spans:
        why = "OCR found none either" if hygiene and hygiene.ocr_enabled else "OCR is off or not installed"
        raise NoExtractableText(f"{filename} contains no extractable text (scanned or blank pages; {why}).")
    metadata: dict[str, Any] = {"total_pages": document.page_count, "pages_with_text": len(spans)}
    if document.is_repaired:
        metadata["repaired"] = True
    if hygiene is not None:
        metadata |= hygiene.metadata()
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="pdf",
        metadata=metadata | (extra or {}),
        page_spans=spans,
        title=(document.metadata or {}).get("title") or None,
        positions=positions,
    )


def page_blocks(page: Any, tables: bool = False) -> list[TextSpan]:
    """The page's text blocks in content order (joined, they are ``page.get_text()``), with their areas
    and words (read from the same text page). With ``tables``, the words of each ruled table's cells
    are replaced by the table as Markdown (`pdf_tables.py`), where the first of them was."""
    import pymupdf

    textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_BLOCKS)  # what get_text("blocks") reads
    words = text_layer_pieces(textpage)
    spans = [
        TextSpan(block[4], (block[0], block[1], block[2], block[3]), tuple(words.get(block[5], ())))
        for block in textpage.extractBLOCKS()
        if block[6] == 0
    ]
    if not tables:
        return spans
    try:
        found = page_tables(page, [word for block in words.values() for word in block])
    except Exception:  # noqa: BLE001 - a failed table search keeps the page's plain blocks
        return spans
    for table in found:
        spans = _with_table(spans, table)
    return spans


def _with_table(spans: list[TextSpan], table: Table) -> list[TextSpan]:
    """``spans`` with the table's words taken out of their blocks and the table written where the first
    of them was. A block's other words (MuPDF often puts the line under a table in its block) stay, as a
    span before the table when above it, else after it."""
    taken = set(table.words)
    touched = [index for index, span in enumerate(spans) if any(piece in taken for piece in span.pieces)]
    if not touched:
        return spans
    above: list[Piece] = []
    below: list[Piece] = []
    for index in touched:
        for piece in spans[index].pieces:
            if piece not in taken:
                (above if (piece[1] + piece[3]) / 2 < table.box[1] else below).append(piece)
    replaced = TextSpan(f"\n{table.markdown}\n\n", table.box, table.words)
    rest = (span for index, span in enumerate(spans) if index > touched[0] and index not in touched)
    return [*spans[: touched[0]], *_words_span(above), replaced, *_words_span(below), *rest]


def _words_span(words: Sequence[Piece]) -> list[TextSpan]:
    """Words as a span of their own, a line of text per line of theirs (none without words)."""
    if not words:
        return []
    lines = [" ".join(word[4] for word in line) for _, line in itertools.groupby(words, key=lambda w: w[5:7])]
    area = (
        min(word[0] for word in words),
        min(word[1] for word in words),
        max(word[2] for word in words),
        max(word[3] for word in words),
    )
    return [TextSpan("".join(f"{line}\n" for line in lines), area, tuple(words))]


def parse_pdf(
    data: bytes,
    filename: str,
    *,
    budget: ParseBudget = DEFAULT_BUDGET,
    ocr: PageReader | None = None,
    on_progress: Progress | None = None,
) -> ParsedDocument:
    with open_pdf(data, filename, budget.max_pdf_pages) as document:

        def page_spans() -> Iterable[tuple[int, list[TextSpan]]]:
            search = GridSearch()  # the document's budgets for finding tables
            for index in range(document.page_count):
                try:
                    page = document[index]
                    tables = search.worth_searching(page)
                    yield index + 1, page_blocks(page, tables)
                except Exception as exc:
                    raise InvalidInput(f"{filename}: page {index + 1} cannot be read ({exc}).") from exc

        pages, hygiene = clean_pages(document, list(page_spans()), ocr, on_progress, filename)
        text, spans = join_pages((page.number, page.text) for page in pages)
        positions = page_positions(text, spans, pages)
        return pdf_document(text, spans, filename, document, hygiene=hygiene, positions=positions)

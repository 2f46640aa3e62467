"""Parsers: bytes of a known format → `ParsedDocument`; `parse_file` picks one by extension.

Each parser imports its library lazily (`optional.py`), so a missing one affects only its format, and
reads within a `ParseBudget` (`budget.py`). Lone surrogates become U+FFFD, as undecodable bytes do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePath

from carrag.services.errors import EmptyDocument, NoExtractableText, UnsupportedFormat
from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.csv_rows import parse_csv
from carrag.services.parsers.docx_document import parse_docx
from carrag.services.parsers.email_message import parse_eml
from carrag.services.parsers.epub_book import parse_epub
from carrag.services.parsers.html_markdown import parse_html
from carrag.services.parsers.image import IMAGE_EXTENSIONS, parse_image
from carrag.services.parsers.json_document import parse_json
from carrag.services.parsers.markdown_file import parse_markdown
from carrag.services.parsers.odt_document import parse_odt
from carrag.services.parsers.pdf import OcrReader, Progress, parse_pdf
from carrag.services.parsers.pdf_markdown import parse_pdf_markdown
from carrag.services.parsers.pptx_slides import parse_pptx
from carrag.services.parsers.rtf_document import parse_rtf
from carrag.services.parsers.source_code import CODE_EXTENSIONS, parse_code
from carrag.services.parsers.text import parse_text
from carrag.services.parsers.xlsx_sheets import parse_xlsx
from carrag.services.vocabulary import PdfMode

Parser = Callable[[bytes, str, ParseBudget], ParsedDocument]


def _within(parse: Callable[..., ParsedDocument]) -> Parser:
    """A parser that reads within a budget (keyword ``budget``)."""
    return lambda data, filename, budget: parse(data, filename, budget=budget)


def _unbounded(parse: Callable[[bytes, str], ParsedDocument]) -> Parser:
    """A parser of plain text formats, whose work is bounded by the upload's size alone."""
    return lambda data, filename, budget: parse(data, filename)


PARSERS: dict[str, Parser] = {
    ".pdf": _within(parse_pdf),  # parse_file gives it the OCR reader and the progress callback
    **dict.fromkeys(IMAGE_EXTENSIONS, _within(parse_image)),  # likewise
    ".txt": _unbounded(parse_text),
    ".text": _unbounded(parse_text),
    ".md": _within(parse_markdown),
    ".markdown": _within(parse_markdown),
    ".rst": _unbounded(parse_text),
    ".csv": _unbounded(parse_csv),
    ".json": _unbounded(parse_json),
    ".html": _within(parse_html),
    ".htm": _within(parse_html),
    ".docx": _within(parse_docx),
    ".xlsx": _within(parse_xlsx),
    ".pptx": _within(parse_pptx),
    ".epub": _within(parse_epub),
    ".odt": _within(parse_odt),
    ".rtf": _unbounded(parse_rtf),
    ".eml": _within(parse_eml),
    **dict.fromkeys(CODE_EXTENSIONS, _unbounded(parse_code)),
}

SUPPORTED_EXTENSIONS = tuple(sorted(PARSERS))


def extension_of(filename: str) -> str:
    return PurePath(filename).suffix.lower()


def check_supported(filename: str) -> str:
    extension = extension_of(filename)
    if extension not in PARSERS:
        shown = extension or "no extension"
        raise UnsupportedFormat(
            f"Unsupported file type ({shown}) for {filename!r}. Supported: {', '.join(SUPPORTED_EXTENSIONS)}."
        )
    return extension


def parse_file(
    data: bytes,
    filename: str,
    *,
    budget: ParseBudget = DEFAULT_BUDGET,
    pdf_mode: PdfMode = PdfMode.TEXT,
    ocr: OcrReader | None = None,
    on_progress: Progress | None = None,
) -> ParsedDocument:
    """``ocr`` reads pictures and PDF pages without usable text; ``on_progress(done, total)`` follows it."""
    extension = check_supported(filename)
    if not data:
        raise EmptyDocument(f"{filename} is empty.")
    if extension == ".pdf":
        pdf_parser = parse_pdf_markdown if pdf_mode == "markdown" else parse_pdf
        parsed = pdf_parser(data, filename, budget=budget, ocr=ocr, on_progress=on_progress)
    elif extension in IMAGE_EXTENSIONS:
        parsed = parse_image(data, filename, budget=budget, ocr=ocr, on_progress=on_progress)
    else:
        parsed = PARSERS[extension](data, filename, budget)
    if not parsed.text.strip():
        raise NoExtractableText(f"{filename} contains no extractable text.")
    return without_surrogates(parsed)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(parsed: ParsedDocument) -> ParsedDocument:
    """Lone surrogates (which no UTF-8 writer accepts) replaced with U+FFFD in the text and title."""
    parsed.text = _LONE_SURROGATE.sub("\ufffd", parsed.text)
    if parsed.title is not None:
        parsed.title = _LONE_SURROGATE.sub("\ufffd", parsed.title)
    return parsed

"""Parsers: bytes of a known format → `ParsedDocument`. `parse_file` picks one by extension.

Parsers are synchronous and CPU-bound; the pipeline runs them off the event loop. Each parser
module imports its format library lazily (see `optional.py`), so a missing library only affects
its own format, with an install hint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from carrag.services.errors import EmptyDocument, NoExtractableText, UnsupportedFormat
from carrag.services.models import ParsedDocument
from carrag.services.parsers.csv_rows import parse_csv
from carrag.services.parsers.docx_document import parse_docx
from carrag.services.parsers.email_message import parse_eml
from carrag.services.parsers.epub_book import parse_epub
from carrag.services.parsers.html_markdown import parse_html
from carrag.services.parsers.json_document import parse_json
from carrag.services.parsers.odt_document import parse_odt
from carrag.services.parsers.pdf import PageReader, Progress, parse_pdf
from carrag.services.parsers.pdf_markdown import parse_pdf_markdown
from carrag.services.parsers.pptx_slides import parse_pptx
from carrag.services.parsers.rtf_document import parse_rtf
from carrag.services.parsers.source_code import CODE_EXTENSIONS, parse_code
from carrag.services.parsers.text import parse_markdown, parse_text
from carrag.services.parsers.xlsx_sheets import parse_xlsx
from carrag.services.vocabulary import PdfMode

Parser = Callable[[bytes, str], ParsedDocument]

PARSERS: dict[str, Parser] = {
    ".pdf": parse_pdf,
    ".txt": parse_text,
    ".text": parse_text,
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".rst": parse_text,
    ".csv": parse_csv,
    ".json": parse_json,
    ".html": parse_html,
    ".htm": parse_html,
    ".docx": parse_docx,
    ".xlsx": parse_xlsx,
    ".pptx": parse_pptx,
    ".epub": parse_epub,
    ".odt": parse_odt,
    ".rtf": parse_rtf,
    ".eml": parse_eml,
    **dict.fromkeys(CODE_EXTENSIONS, parse_code),
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
    max_pdf_pages: int = 5000,
    pdf_mode: PdfMode = PdfMode.TEXT,
    ocr: PageReader | None = None,
    on_progress: Progress | None = None,
) -> ParsedDocument:
    """``ocr`` reads PDF pages without usable text; ``on_progress(done, total)`` follows it."""
    extension = check_supported(filename)
    if not data:
        raise EmptyDocument(f"{filename} is empty.")
    if extension == ".pdf":
        pdf_parser = parse_pdf_markdown if pdf_mode == "markdown" else parse_pdf
        parsed = pdf_parser(data, filename, max_pages=max_pdf_pages, ocr=ocr, on_progress=on_progress)
    else:
        parsed = PARSERS[extension](data, filename)
    if not parsed.text.strip():
        raise NoExtractableText(f"{filename} contains no extractable text.")
    return parsed

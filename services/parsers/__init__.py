"""Parsers: bytes of a known format → `ParsedDocument`. `parse_file` picks one by extension.

Parsers are synchronous and CPU-bound; the pipeline runs them off the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from services.errors import EmptyDocument, NoExtractableText, UnsupportedFormat
from services.models import ParsedDocument
from services.parsers.pdf import parse_pdf
from services.parsers.text import parse_text

Parser = Callable[[bytes, str], ParsedDocument]

PARSERS: dict[str, Parser] = {
    ".pdf": parse_pdf,
    ".txt": parse_text,
    ".text": parse_text,
    ".md": parse_text,
    ".markdown": parse_text,
}

SUPPORTED_EXTENSIONS = tuple(sorted(PARSERS))


def extension_of(filename: str) -> str:
    return PurePath(filename).suffix.lower()


def check_supported(filename: str) -> str:
    extension = extension_of(filename)
    if extension not in PARSERS:
        shown = extension or "no extension"
        raise UnsupportedFormat(
            f"Unsupported file type ({shown}) for {filename!r}. "
            f"Supported: {', '.join(SUPPORTED_EXTENSIONS)}."
        )
    return extension


def parse_file(data: bytes, filename: str, *, max_pdf_pages: int = 5000) -> ParsedDocument:
    extension = check_supported(filename)
    if not data:
        raise EmptyDocument(f"{filename} is empty.")
    if extension == ".pdf":
        parsed = parse_pdf(data, filename, max_pages=max_pdf_pages)
    else:
        parsed = PARSERS[extension](data, filename)
    if not parsed.text.strip():
        raise NoExtractableText(f"{filename} contains no extractable text.")
    return parsed

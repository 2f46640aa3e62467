"""Plain text and Markdown: UTF-8 with undecodable bytes replaced (seed 001 step 2).

A Markdown file is marked ``metadata.markup = "markdown"`` (so the pipeline chunks it by headers
unless the request names a strategy) and takes its first ``#`` heading as its title."""

from __future__ import annotations

from carrag.services.chunking.markdown import find_headers
from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.decoding import decode_declared
from carrag.services.parsers.pdf_text_quality import document_vocabulary, join_hyphenated_breaks

# Share of control characters (other than tab/newline/carriage return/form feed) above which a file
# is treated as binary data with a text extension rather than text.
_BINARY_CONTROL_RATIO = 0.10


def decode_text(data: bytes, filename: str, charset: str | None = None) -> str:
    """UTF-8 (UTF-16 with a BOM), undecodable bytes replaced. With a ``charset`` declared by the
    sender (a web server), that charset when Python knows it and it fits, else detection."""
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidInput(f"{filename} looks like binary data, not text (it contains NUL bytes).")
    if charset is not None:
        text = decode_declared(data, charset)[0]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if looks_binary(text):
        raise InvalidInput(f"{filename} looks like binary data, not UTF-8 text.")
    return text


def looks_binary(text: str) -> bool:
    """True when the start of decoded text is mostly control characters or undecodable bytes."""
    sample = text[:8192]
    if not sample:
        return False
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f")
    replaced = sample.count("\ufffd")
    return (controls + replaced) / len(sample) > _BINARY_CONTROL_RATIO


def parse_text(data: bytes, filename: str, *, charset: str | None = None) -> ParsedDocument:
    text = groff_hyphens_as_ascii(decode_text(data, filename, charset))
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="text",
        metadata={"line_count": len(text.splitlines())},
    )


def groff_hyphens_as_ascii(text: str) -> str:
    """A manual page rendered to text (``man -P cat``) writes every hyphen as U+2010, option dashes
    (``‐b``) and line-break hyphens (``authentica‐\\n   tion``) alike: words broken at a line end are
    joined (unless the document writes the pair with a hyphen elsewhere), the rest become ``-`` as users
    type them."""
    if "\u2010" not in text:
        return text
    vocabulary = document_vocabulary([text.replace("\u2010", "-")])
    joined, _ = join_hyphenated_breaks(text, vocabulary, hyphens="\u2010")
    return joined.replace("\u2010", "-")


def first_markdown_h1(text: str) -> str | None:
    """The text of the first level-1 ATX heading (``# Title``) outside fenced code blocks."""
    return next((header.title for header in find_headers(text) if header.level == 1 and header.title), None)

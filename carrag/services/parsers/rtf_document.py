"""RTF → text with striprtf (code pages and Unicode escapes decoded); its ``cell|cell|`` table rows
become Markdown table rows. Formatting is not kept.
"""

from __future__ import annotations

import codecs
import re

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.markdown_table import markdown_table
from carrag.services.parsers.optional import import_optional

_CODE_PAGE = re.compile(rb"\\ansicpg(\d{3,5})")
_TABLE_ROW = re.compile(r"^(?:[^|\n]*\|)+$")


def code_page(data: bytes) -> str:
    """The code page the document declares (``\\ansicpgN``) when Python knows it, else Windows-1252."""
    match = _CODE_PAGE.search(data[:4096])
    candidate = f"cp{int(match.group(1))}" if match else "cp1252"
    try:
        codecs.lookup(candidate)
    except LookupError:
        return "cp1252"
    return candidate


def text_blocks(text: str) -> list[str]:
    """Each non-empty line a block; runs of table rows (``cell|cell|``) one Markdown table."""
    blocks: list[str] = []
    table: list[list[str]] = []

    def close_table() -> None:
        if table:
            blocks.append(markdown_table(table))
            table.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if _TABLE_ROW.match(line) and line.strip("|").strip():
            table.append([cell.strip() for cell in line.split("|")[:-1]])
            continue
        close_table()
        if line:
            blocks.append(line)
    close_table()
    return blocks


def parse_rtf(data: bytes, filename: str) -> ParsedDocument:
    striprtf = import_optional("striprtf.striprtf", package="striprtf", extension=".rtf")
    if not data.lstrip()[:5].startswith(b"{\\rtf"):
        raise InvalidInput(f"{filename} is not an RTF document (it does not start with {{\\rtf).")
    encoding = code_page(data)
    try:
        text = striprtf.rtf_to_text(data.decode("latin-1"), encoding=encoding, errors="replace")
    except Exception as exc:  # a malformed group structure
        raise InvalidInput(f"{filename} is not a readable RTF document ({exc}).") from exc
    text = "\n\n".join(text_blocks(text))
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="rtf",
        metadata={"encoding": encoding, "line_count": len(text.splitlines())},
    )

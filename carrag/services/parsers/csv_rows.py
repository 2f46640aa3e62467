"""CSV → text: rows read in the dialect sniffed from the start (so quoted delimiters and newlines survive)
and written back with commas; blank rows dropped.
"""

from __future__ import annotations

import csv
import io

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.text import decode_text

SNIFF_CHARS = 64 * 1024
DELIMITERS = ",;\t|"


def sniff_dialect(text: str) -> type[csv.Dialect] | csv.Dialect:
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # do not end the sample inside a row
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS)
    except csv.Error:
        return csv.excel


def rows_to_csv(rows: list[list[str]]) -> str:
    """Rows as comma-separated lines, quoting only fields that contain commas, quotes or newlines."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().removesuffix("\n")


def parse_csv(data: bytes, filename: str) -> ParsedDocument:
    text = decode_text(data, filename)
    dialect = sniff_dialect(text)
    try:
        rows = [row for row in csv.reader(io.StringIO(text, newline=""), dialect) if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise InvalidInput(f"{filename} is not readable as CSV ({exc}).") from exc
    return ParsedDocument(
        text=rows_to_csv(rows),
        filename=filename,
        source_type="csv",
        metadata={
            "row_count": len(rows),
            "column_count": max((len(row) for row in rows), default=0),
            "delimiter": dialect.delimiter,
        },
    )

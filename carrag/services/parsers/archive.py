"""Checks for ZIP-based formats before a library unpacks them.

Declared member sizes are the uploader's to choose, so every member is inflated once, in pieces,
counting the bytes that come out: past MAX_ARCHIVE_BYTES or MAX_ARCHIVE_MEMBERS it is a 413, and a bad
CRC a 400. The XML members, which libraries build whole trees from, have the smaller MAX_MARKUP_BYTES
(an .xlsx's streamed worksheets do not count).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget, too_large

# Office files that are encrypted (or old binary .doc/.xls) are OLE compound files, not ZIPs.
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
PIECE = 1024 * 1024
MARKUP = (".xml", ".xhtml", ".html", ".htm", ".rels", ".opf", ".ncx")
STREAMED = ("xl/worksheets/",)  # parsed as a stream, not into a tree


def check_office_archive(data: bytes, filename: str, kind: str, budget: ParseBudget = DEFAULT_BUDGET) -> None:
    if data.startswith(OLE_SIGNATURE):
        raise InvalidInput(
            f"{filename} is password-protected or an old binary Office file, not a {kind} archive; "
            f"save it as an unencrypted {kind}."
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if len(members) > budget.max_archive_members:
                raise too_large(
                    filename, f"holds {len(members):,} files", budget.max_archive_members, "MAX_ARCHIVE_MEMBERS"
                )
            inflated = markup = 0
            for member in members:
                is_markup = member.filename.lower().endswith(MARKUP) and not member.filename.startswith(STREAMED)
                with archive.open(member) as stream:
                    while piece := stream.read(PIECE):
                        inflated += len(piece)
                        markup += len(piece) if is_markup else 0
                        if inflated > budget.max_archive_bytes:
                            raise too_large(
                                filename,
                                f"inflates to more than {budget.max_archive_bytes:,} bytes",
                                budget.max_archive_bytes,
                                "MAX_ARCHIVE_BYTES",
                            )
                        if markup > budget.max_markup_bytes:
                            raise too_large(
                                filename,
                                f"holds more than {budget.max_markup_bytes:,} bytes of XML",
                                budget.max_markup_bytes,
                                "MAX_MARKUP_BYTES",
                            )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError) as exc:
        raise InvalidInput(f"{filename} is not a readable {kind} file ({exc}).") from exc


def open_office_archive(
    data: bytes, filename: str, kind: str, opener: Callable[[io.BytesIO], Any], budget: ParseBudget, noun: str = "file"
) -> Any:
    """The archive checked (`check_office_archive`), then opened by its library's ``opener``."""
    check_office_archive(data, filename, kind, budget)
    try:
        return opener(io.BytesIO(data))
    except Exception as exc:  # the libraries raise many types for damaged packages
        raise InvalidInput(f"{filename} is not a readable {kind} {noun} ({exc}).") from exc

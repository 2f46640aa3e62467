"""Checks for ZIP-based formats (.docx, .xlsx, .pptx, .odt, .epub) before a library unpacks them.

A few megabytes of upload can inflate to gigabytes (a "zip bomb"), and the sizes an archive
declares for its members are the attacker's to choose. So every member is inflated here once, in
pieces, counting the bytes that actually come out: past ``MAX_ARCHIVE_BYTES`` (or more members than
``MAX_ARCHIVE_MEMBERS``) the upload is refused with 413 before python-docx, openpyxl and the others
read it, and memory holds one piece at a time. A damaged member (a bad CRC) is a 400.

The markup among them (XML, XHTML) is what the libraries build whole trees from — about 10 MB of
memory and 1.5 s per MB of a .docx's XML — so it has its own, smaller budget,
``MAX_MARKUP_BYTES``; an .xlsx's worksheets are read as a stream (bounded by ``MAX_SHEET_CELLS``)
and do not count.
"""

from __future__ import annotations

import io
import zipfile

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

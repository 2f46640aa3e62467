"""Checks for ZIP-based office formats (.docx, .xlsx) before a library unpacks them."""

from __future__ import annotations

import io
import zipfile

from carrag.services.errors import InvalidInput

# A few megabytes of upload can declare gigabytes of XML (a "zip bomb"); refuse archives whose
# members would expand beyond this before python-docx/openpyxl read them into memory.
MAX_UNCOMPRESSED_BYTES = 256 * 1024 * 1024

# Office files that are encrypted (or old binary .doc/.xls) are OLE compound files, not ZIPs.
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def check_office_archive(data: bytes, filename: str, kind: str, max_uncompressed: int = MAX_UNCOMPRESSED_BYTES) -> None:
    if data.startswith(OLE_SIGNATURE):
        raise InvalidInput(
            f"{filename} is password-protected or an old binary Office file, not a {kind} archive; "
            f"save it as an unencrypted {kind}."
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            declared = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise InvalidInput(f"{filename} is not a readable {kind} file (not a ZIP archive: {exc}).") from exc
    if declared > max_uncompressed:
        raise InvalidInput(
            f"{filename} would expand to {declared:,} bytes; the limit for {kind} files is {max_uncompressed:,} bytes."
        )

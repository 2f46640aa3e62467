"""The original bytes of a document (issue 14, item 4): what is kept at ingest (KEEP_ORIGINALS) and how
it is described for a download (`GET /documents/{id}/file`, `carrag documents download`).

The stores keep them beside the document and delete them with it (`Store.write_document(original=...)`,
`Store.get_original`); this module only decides the content type and file name."""

from __future__ import annotations

import mimetypes
from pathlib import PurePosixPath
from urllib.parse import quote, unquote, urlsplit

from carrag.services.fetchers.base import MEDIA_TYPE_EXTENSIONS, FetchedPage
from carrag.services.models import OriginalFile

OCTET_STREAM = "application/octet-stream"
# types mimetypes does not know everywhere (minimal containers have no /etc/mime.types)
_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".json": "application/json",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".epub": "application/epub+zip",
    ".eml": "message/rfc822",
}


def content_type_for(filename: str) -> str:
    """The media type a file name's extension implies (``application/octet-stream`` when unknown)."""
    suffix = PurePosixPath(filename).suffix.lower()
    return _EXTRA_TYPES.get(suffix) or mimetypes.guess_type(filename, strict=False)[0] or OCTET_STREAM


def uploaded_original(data: bytes, filename: str) -> OriginalFile:
    return OriginalFile(data, content_type_for(filename), PurePosixPath(filename.replace("\\", "/")).name or filename)


def fetched_original(page: FetchedPage) -> OriginalFile:
    """A fetched body as served: the server's media type (with its charset) and a file name from the
    URL's last path segment (or ``document`` with the media type's extension)."""
    content_type = page.content_type or OCTET_STREAM
    if page.charset and content_type.startswith("text/"):
        content_type = f"{content_type}; charset={page.charset}"
    return OriginalFile(page.body, content_type, fetched_filename(page.final_url or page.url, page.content_type))


def fetched_filename(url: str, content_type: str) -> str:
    name = unquote(PurePosixPath(urlsplit(url).path).name)
    if name and "." in name:
        return name
    extension = (
        MEDIA_TYPE_EXTENSIONS.get(content_type)
        or _known_extension(content_type)
        or mimetypes.guess_extension(content_type)
        or ".bin"
    )
    return f"{name or 'document'}{extension}"


def _known_extension(content_type: str) -> str | None:
    return next((suffix for suffix, known in _EXTRA_TYPES.items() if known == content_type), None)


def content_disposition(filename: str) -> str:
    """``attachment`` with the file name: an ASCII fallback and the exact name (RFC 6266 / 5987)."""
    fallback = "".join(ch if 32 <= ord(ch) < 127 and ch not in '"\\;' else "_" for ch in filename) or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"

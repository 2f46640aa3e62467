"""EPUB → Markdown: the spine's XHTML documents in reading order, each through the HTML parser, with the
OPF's title, author and language (lxml with entities and network off). DRM-encrypted books are refused.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from urllib.parse import unquote

from carrag.services.errors import CarragError, InvalidInput, PayloadTooLarge
from carrag.services.models import ParsedDocument
from carrag.services.parsers.archive import check_office_archive
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.html_markdown import parse_html
from carrag.services.parsers.optional import import_optional

CONTENT_TYPES = {"application/xhtml+xml", "text/html", "application/html"}
_NAMESPACES = {
    "container": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
}


def _xml(data: bytes, name: str, filename: str):
    etree = import_optional("lxml.etree", package="lxml", extension=".epub")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise InvalidInput(f"{filename}: {name} is not readable XML ({exc}).") from exc
    if root is None:
        raise InvalidInput(f"{filename}: {name} is empty or not XML.")
    return root


def _member(archive: zipfile.ZipFile, name: str, filename: str) -> bytes:
    try:
        return archive.read(name)
    except KeyError as exc:
        raise InvalidInput(f"{filename} is not a readable .epub file (it has no {name}).") from exc


def _first_text(root, path: str) -> str | None:
    found = root.find(path, _NAMESPACES)
    text = "".join(found.itertext()).strip() if found is not None else ""
    return text or None


def parse_epub(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    check_office_archive(data, filename, ".epub", budget)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        container = _xml(_member(archive, "META-INF/container.xml", filename), "META-INF/container.xml", filename)
        rootfile = container.find(".//container:rootfile", _NAMESPACES)
        package_path = rootfile.get("full-path") if rootfile is not None else None
        if not package_path:
            raise InvalidInput(f"{filename}: META-INF/container.xml names no package document.")
        package = _xml(_member(archive, package_path, filename), package_path, filename)
        encrypted = _encrypted_members(archive, filename)
        base = posixpath.dirname(package_path)
        manifest = {
            item.get("id"): item
            for item in package.iterfind("opf:manifest/opf:item", _NAMESPACES)
            if item.get("id") and item.get("href")
        }
        chapters: list[str] = []
        for itemref in package.iterfind("opf:spine/opf:itemref", _NAMESPACES):
            item = manifest.get(itemref.get("idref"))
            if item is None or (item.get("media-type") or "").lower() not in CONTENT_TYPES:
                continue
            path = posixpath.normpath(posixpath.join(base, unquote(item.get("href").split("#", 1)[0])))
            if path in encrypted:
                raise InvalidInput(f"{filename} is DRM-protected (its content is encrypted) and cannot be read.")
            try:
                content = archive.read(path)
            except KeyError:
                continue  # a spine entry the archive does not hold
            try:
                chapter = parse_html(content, posixpath.basename(path), budget=budget, site_chrome=False).text.strip()
            except PayloadTooLarge:
                raise  # over a budget: the book is refused, not silently shortened
            except CarragError:
                continue  # a content document without text (a cover image page) or not HTML
            if chapter:
                chapters.append(chapter)
    title = _first_text(package, "opf:metadata/dc:title")
    metadata = {
        "title": title,
        "author": _first_text(package, "opf:metadata/dc:creator"),
        "language": _first_text(package, "opf:metadata/dc:language"),
        "chapter_count": len(chapters),
    }
    return ParsedDocument(
        text="\n\n".join(chapters), filename=filename, source_type="epub", metadata=metadata, title=title
    )


def _encrypted_members(archive: zipfile.ZipFile, filename: str) -> set[str]:
    """Paths that ``META-INF/encryption.xml`` declares encrypted (fonts are often obfuscated
    that way; content documents only under DRM)."""
    try:
        data = archive.read("META-INF/encryption.xml")
    except KeyError:
        return set()
    root = _xml(data, "META-INF/encryption.xml", filename)
    return {
        posixpath.normpath(unquote(reference.get("URI")))
        for reference in root.iter("{*}CipherReference")
        if reference.get("URI")
    }

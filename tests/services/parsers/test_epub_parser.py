from __future__ import annotations

import io
import zipfile

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file
from tests.services.parsers.formats import REAL

CONTAINER = (
    '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
    '<rootfiles><rootfile full-path="OPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles>'
    "</container>"
)
PACKAGE = (
    '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" xmlns:dc="http://purl.org/dc/elements/1.1/"'
    ' version="3.0"><metadata><dc:title>Service Book</dc:title><dc:language>en</dc:language></metadata><manifest>'
    '<item id="b" href="text/two.xhtml" media-type="application/xhtml+xml"/>'
    '<item id="a" href="text/one.xhtml" media-type="application/xhtml+xml"/>'
    '<item id="css" href="style.css" media-type="text/css"/></manifest>'
    '<spine><itemref idref="a"/><itemref idref="b"/><itemref idref="css"/></spine></package>'
)


def chapter(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"


def build_epub(extra: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OPS/book.opf", PACKAGE)
        archive.writestr("OPS/text/one.xhtml", chapter("Chapter One", "Check the oil."))
        archive.writestr("OPS/text/two.xhtml", chapter("Chapter Two", "Check the tyres."))
        archive.writestr("OPS/style.css", "p { color: red }")
        for name, content in (extra or {}).items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_chapters_follow_the_spine_not_the_manifest() -> None:
    parsed = parse_file(build_epub(), "service.epub")
    assert parsed.source_type == "epub"
    assert parsed.title == "Service Book"
    assert parsed.metadata["chapter_count"] == 2
    assert parsed.text.index("# Chapter One") < parsed.text.index("Check the oil.") < parsed.text.index("# Chapter Two")
    assert "color: red" not in parsed.text


def test_real_book() -> None:
    parsed = parse_file((REAL / "winter-sports.epub").read_bytes(), "winter-sports.epub")
    assert parsed.title == "Winter Sports in Switzerland"
    assert parsed.metadata["author"] == "E. F. Benson"
    assert parsed.metadata["language"] == "en"
    assert "# WINTER SPORTS IN SWITZERLAND" in parsed.text
    assert len(parsed.text) > 200_000


def test_drm_protected_content_is_refused() -> None:
    encryption = (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
        '<enc:CipherReference URI="OPS/text/one.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>'
    )
    with pytest.raises(InvalidInput, match="DRM-protected"):
        parse_file(build_epub({"META-INF/encryption.xml": encryption}), "locked.epub")


def test_archive_without_container_is_a_clear_400() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
    with pytest.raises(InvalidInput, match="no META-INF/container.xml"):
        parse_file(buffer.getvalue(), "empty.epub")


def test_external_entities_are_not_resolved(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    package = PACKAGE.replace(
        '<?xml version="1.0"?>', f'<?xml version="1.0"?><!DOCTYPE p [<!ENTITY x SYSTEM "file://{secret}">]>'
    ).replace("Service Book", "&x;")
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(build_epub()), "r") as source, zipfile.ZipFile(buffer, "w") as target:
        for item in source.infolist():
            target.writestr(item, package if item.filename == "OPS/book.opf" else source.read(item))
    parsed = parse_file(buffer.getvalue(), "xxe.epub")
    assert "TOP SECRET" not in parsed.text and "TOP SECRET" not in str(parsed.metadata)


def test_a_chapter_table_of_contents_is_the_books_content_not_site_chrome() -> None:
    """The HTML parser drops a page's link-dense table of contents as site furniture; in a book it holds
    the page numbers a reader asks for ("On which page does the Ice-Hockey chapter start?")."""
    links = "".join(
        f'<tr><td><a href="two.xhtml#c{n}">{n}.</a></td><td><a href="two.xhtml#c{n}">{name}</a></td>'
        f'<td><a href="two.xhtml#p{page}">{page}</a></td></tr>'
        for n, name, page in [("I", "Skating", 1), ("II", "Rinks", 23), ("V", "Ice-Hockey", 129)]
    )
    preface = "<p>" + "The winter resorts of Switzerland offer skating, curling and ski-ing to visitors. " * 8 + "</p>"
    contents = f"<html><body><h1>Winter Sports</h1>{preface}<h2>Contents</h2><table>{links}</table></body></html>"
    parsed = parse_file(build_epub({"OPS/text/one.xhtml": contents}), "service.epub")
    assert "| V. | Ice-Hockey | 129 |" in parsed.text

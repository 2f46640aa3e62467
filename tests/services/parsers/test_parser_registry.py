"""Which parser handles which extension, and what happens when a format's library is missing."""

from __future__ import annotations

import sys

import pytest

from carrag.services.errors import MissingDependency, UnsupportedFormat
from carrag.services.parsers import SUPPORTED_EXTENSIONS, parse_file
from tests.services.parsers.formats import REAL, fixture_bytes

EXPECTED = {
    ".csv",
    ".docx",
    ".htm",
    ".html",
    ".json",
    ".markdown",
    ".md",
    ".pdf",
    ".rst",
    ".text",
    ".txt",
    ".xlsx",
    ".pptx",
    ".epub",
    ".odt",
    ".rtf",
    ".eml",
    ".py",
    ".pyi",
    ".js",
    ".mjs",
    ".cjs",
    ".jsx",
    ".ts",
    ".tsx",
    ".yaml",
    ".yml",
    ".toml",
    ".sql",
    ".png",
    ".jpg",
    ".jpeg",
    ".tif",
    ".tiff",
}


def test_supported_extensions() -> None:
    assert set(SUPPORTED_EXTENSIONS) == EXPECTED


def test_unsupported_type_lists_the_supported_ones() -> None:
    with pytest.raises(UnsupportedFormat, match=r"Unsupported file type \(.ppt\).*\.docx, .eml, .epub, .htm, .html"):
        parse_file(b"\xd0\xcf", "slides.ppt")


def test_rst_is_utf8_text() -> None:
    parsed = parse_file((REAL / "README.rst").read_bytes(), "README.rst")
    assert parsed.source_type == "text"
    assert parsed.text.startswith("Example Docs\n------------\n") and ".. code:: bash" in parsed.text
    assert parsed.metadata == {"line_count": 28}


def test_extensions_are_case_insensitive() -> None:
    assert parse_file(fixture_bytes("service_schedule.json"), "SCHEDULE.JSON").source_type == "json"
    assert parse_file(fixture_bytes("troubleshooting.html"), "Page.HTM").source_type == "html"


@pytest.mark.parametrize(
    ("module", "filename", "package", "kwargs"),
    [
        ("docx", "workshop_notes.docx", "python-docx", {}),
        ("openpyxl", "service_log.xlsx", "openpyxl", {}),
        ("markdownify", "troubleshooting.html", "markdownify", {}),
        ("bs4", "troubleshooting.html", "beautifulsoup4", {}),
        ("pptx", "real/sample-presentation.pptx", "python-pptx", {}),
        ("odf.opendocument", "real/simple.odt", "odfpy", {}),
        ("striprtf.striprtf", "real/fake-doc.rtf", "striprtf", {}),
        ("pymupdf4llm", "manual.pdf", "pymupdf4llm", {"pdf_mode": "markdown"}),
    ],
)
def test_missing_library_gives_an_install_hint(
    monkeypatch: pytest.MonkeyPatch, manual_pdf: bytes, module: str, filename: str, package: str, kwargs: dict
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import <module>` raise ImportError
    data = manual_pdf if filename.endswith(".pdf") else fixture_bytes(filename)
    with pytest.raises(MissingDependency, match=f"need the Python package '{package}'.*pip install {package}"):
        parse_file(data, filename, **kwargs)

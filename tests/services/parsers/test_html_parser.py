from __future__ import annotations

import re

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file
from tests.services.parsers.formats import REAL, fixture_bytes


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def test_html_becomes_markdown_without_scripts_styles_or_head() -> None:
    parsed = parse_file(fixture_bytes("troubleshooting.html"), "troubleshooting.html")
    assert parsed.source_type == "html"
    assert parsed.title == parsed.metadata["title"] == "Aurora T-200 Troubleshooting"
    text = parsed.text
    assert text.startswith("# Troubleshooting\n\nMost faults on the **Aurora T-200** are solved by a restart")
    assert "## Error codes" in text and "## Motor noise" in text
    assert "| E07 | Speed sensor not detected | Align the spoke magnet with the sensor |" in text
    assert "- Check that the chainring bolts are tight." in text
    assert "See the full manual for details." in text and "example.com" not in text, "link text kept, target dropped"
    assert "Wiring diagram" in text and "data:image" not in text, "images become their alt text"
    for noise in ("do-not-index", "font-family", "Enable JavaScript", "Aurora T-200 Troubleshooting"):
        assert noise not in text


def test_matches_the_docling_reference_conversion() -> None:
    parsed = parse_file((REAL / "example_03.html").read_bytes(), "example_03.html")
    reference = (REAL / "example_03.groundtruth.md").read_text()
    assert words(parsed.text) == words(reference)
    assert "## Data Table" in parsed.text and "- First item in unordered list" in parsed.text


def test_undeclared_windows_1252_is_decoded() -> None:
    parsed = parse_file((REAL / "fake-html-cp1252.html").read_bytes(), "fake-html-cp1252.html")
    assert parsed.metadata["encoding"] == "windows-1252"
    for phrase in ("Die schöne Frau", "15,50 €", "L'été était très chaud", "El niño"):
        assert phrase in parsed.text


def test_utf16_with_bom_and_meta_charset() -> None:
    html = '<html><head><meta charset="utf-16"><title>Größe</title></head><body><p>Übergröße 58 cm</p></body></html>'
    parsed = parse_file(html.encode("utf-16"), "wide.htm")
    assert parsed.text == "Übergröße 58 cm" and parsed.title == "Größe"


def test_hidden_elements_and_layout_tables() -> None:
    html = (
        "<body><div style='display: none'>0000013156 hidden XBRL facts</div><p hidden>also hidden</p>"
        "<table><tr><td><table><tr><th>Part</th><th>Price</th></tr><tr><td>Chain</td><td>39</td></tr></table></td>"
        "<td><p>Side column text</p></td></tr></table></body>"
    )
    text = parse_file(html.encode(), "layout.html").text
    assert "hidden" not in text
    assert "| Part | Price |\n| --- | --- |\n| Chain | 39 |" in text, "the data table stays a table"
    assert "Side column text" in text and "| Side column text" not in text, "the layout table is unwrapped"


def test_very_deep_nesting_falls_back_to_plain_text() -> None:
    html = "<body>" + "<div>" * 5000 + "deep text" + "</div>" * 5000 + "<p>after</p></body>"
    assert parse_file(html.encode(), "deep.html").text == "deep text\n\nafter"


def test_binary_named_html_is_refused() -> None:
    with pytest.raises(InvalidInput, match="binary"):
        parse_file(bytes(range(1, 32)) * 100, "image.html")


def test_script_only_page_has_no_text() -> None:
    with pytest.raises(InvalidInput, match="no extractable text"):
        parse_file(b"<html><head><title>T</title><script>alert(1)</script></head><body></body></html>", "empty.html")


def test_very_deep_nesting_never_enters_the_recursive_extractor_or_converter(monkeypatch) -> None:
    """CI once failed here: at recursion depth the garbage collector ran an unrelated finalizer
    (a llama.cpp object's ``__del__``), which raised RecursionError as an unraisable exception.
    The deep page must be handled without deep recursion at all."""
    from carrag.services.parsers import html_markdown

    def refuse(*_args, **_kwargs):
        raise AssertionError("the recursive path was entered")

    monkeypatch.setattr(html_markdown, "_converter_class", refuse)
    depth = html_markdown.MAX_NESTING_DEPTH + 50
    html = "<body>" + "<div>" * depth + "deep text" + "</div>" * depth + "<p>after</p></body>"
    parsed = parse_file(html.encode(), "deep.html")
    assert parsed.text == "deep text\n\nafter"


def test_nesting_within_the_limit_keeps_the_markdown_conversion() -> None:
    depth = 150
    html = "<body>" + "<div>" * depth + "<h2>Deep heading</h2><p>deep text</p>" + "</div>" * depth + "</body>"
    assert "## Deep heading" in parse_file(html.encode(), "nested.html").text

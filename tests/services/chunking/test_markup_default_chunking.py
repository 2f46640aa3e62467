"""Markdown and HTML are chunked by headers unless the request says otherwise (issue 13 item 2)."""

from __future__ import annotations

from carrag.services.chunking import chunk_document
from carrag.services.ingestion import default_chunking
from carrag.services.parsers import parse_file
from carrag.services.settings import Settings
from tests.services.parsers.formats import REAL, fixture_bytes

LANGUAGE_NAMES = ("Afrikaans", "Alemannisch", "Aragonés", "Asturianu", "Čeština", "Deutsch", "Español")


def test_markdown_and_html_default_to_markdown_chunking() -> None:
    settings = Settings(chunking_strategy="sentence")
    markdown = parse_file(fixture_bytes("owners_handbook.md"), "owners_handbook.md")
    html = parse_file(fixture_bytes("troubleshooting.html"), "troubleshooting.html")
    text = parse_file(b"plain words " * 20, "notes.txt")
    assert default_chunking(markdown, settings) == default_chunking(html, settings) == "markdown"
    assert default_chunking(text, settings) == "sentence"
    assert default_chunking(html, Settings(markdown_chunking_for_markup=False)) == "recursive"


def test_wiki_page_chunks_have_sections_and_no_navigation() -> None:
    settings = Settings()
    parsed = parse_file((REAL / "wiki_duck.html").read_bytes(), "wiki_duck.html")
    chunks = chunk_document(parsed, default_chunking(parsed, settings), settings.chunk_size, settings.chunk_overlap)
    sections = {chunk.section for chunk in chunks}
    for section in ("Duck > Etymology", "Duck > Behaviour > Feeding", "Duck > Relationship with humans > Heraldry"):
        assert section in sections
    assert all(chunk.section for chunk in chunks), "the page starts with its H1, so every chunk has a section"
    navigation = [
        chunk.text
        for chunk in chunks
        if any(name in chunk.text for name in LANGUAGE_NAMES) or "Jump to content" in chunk.text
    ]
    assert navigation == []
    assert "Categories" not in chunks[-1].text and "Privacy policy" not in chunks[-1].text

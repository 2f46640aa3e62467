"""Main content of real HTML pages (issue 13 item 1), on the docling corpus page wiki_duck.html."""

from __future__ import annotations

import re

import pytest

from carrag.services.parsers import parse_file
from carrag.services.parsers.html_main_content import choose_content
from tests.services.parsers.formats import REAL


@pytest.fixture(scope="module")
def duck():
    return parse_file((REAL / "wiki_duck.html").read_bytes(), "wiki_duck.html")


def test_wiki_page_keeps_the_article_and_drops_the_boilerplate(duck) -> None:
    assert duck.metadata["extraction"] == "main_content"
    assert duck.text.startswith("# Duck")
    assert "**Duck** is the common name for numerous species of waterfowl in the family Anatidae." in duck.text
    for heading in ("## Etymology", "## Taxonomy", "### Feeding", "### Heraldry", "## See also"):
        assert f"\n{heading}\n" in duck.text
    boilerplate = (
        "Jump to content",
        "Main menu",
        "Log in",
        "136 languages",
        "Afrikaans",
        "Alemannisch",
        "Toggle the table of contents",
        "Hidden categories",
        "Retrieved from",
        "Privacy policy",
        "This page was last edited",
    )
    assert [phrase for phrase in boilerplate if phrase in duck.text] == []


def test_link_targets_and_citation_markers_are_not_in_the_text(duck) -> None:
    assert "](" not in duck.text and "/wiki/" not in duck.text
    assert "young duck in downy plumage or baby duck," in duck.text, "[1] markers dropped"
    assert not re.search(r"\[\d+\]", duck.text)


def test_tables_stay_markdown_tables(duck) -> None:
    assert "| Kingdom: | Animalia |" in duck.text


def test_headings_dropped_by_the_extractor_are_restored() -> None:
    parsed = parse_file((REAL / "example_03.html").read_bytes(), "example_03.html")
    for heading in ("# Example Document", "## Introduction", "## Background", "## Data Table"):
        assert f"{heading}\n" in parsed.text
    assert parsed.title == "Example Document", "no <title>: the first H1"


def test_whole_page_when_the_extractor_finds_nothing_or_nothing_to_drop() -> None:
    page = "Title Body text of the page with a few more words in it. Menu Links"
    assert choose_content("", page).extraction == "whole_page"
    nearly_all = choose_content("Body text of the page with a few more words in it. Menu Links", page)
    assert nearly_all.extraction == "whole_page" and nearly_all.dropped_share < 0.1
    article = choose_content("Body text", page)
    assert article.extraction == "main_content" and 0.8 < article.dropped_share < 1

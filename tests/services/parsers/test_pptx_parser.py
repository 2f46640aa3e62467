from __future__ import annotations

import io

import pytest

from carrag.services.errors import InvalidInput, NoExtractableText
from carrag.services.parsers import parse_file
from tests.services.parsers.formats import REAL


def test_slides_in_order_with_titles_as_headings_lists_and_tables() -> None:
    parsed = parse_file((REAL / "sample-presentation.pptx").read_bytes(), "sample-presentation.pptx")
    assert parsed.source_type == "pptx"
    assert parsed.metadata["slide_count"] == 4
    headings = [line for line in parsed.text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Title Slide",
        "## This is the first content slide",
        "## This is the second content slide",
        "## This is kinda backwards, huh?",
    ]
    assert "- And a list of bulleted information\n  - With a sub-bullet" in parsed.text
    assert "| Table | A | B | C |\n| --- | --- | --- | --- |\n| 1 | A1 | B1 | C1 |" in parsed.text


def test_slide_numbers_are_the_pages_of_the_text() -> None:
    parsed = parse_file((REAL / "sample-presentation.pptx").read_bytes(), "sample-presentation.pptx")
    assert [span.page for span in parsed.page_spans] == [1, 2, 3, 4]
    for span in parsed.page_spans:
        assert parsed.text[span.start : span.end].startswith("## ")
    third = parsed.page_spans[2]
    assert "Subtopic 1 of subtopic 2" in parsed.text[third.start : third.end]


def test_grouped_shapes_are_read_and_untitled_slides_get_a_number() -> None:
    parsed = parse_file((REAL / "group-shapes-nested.pptx").read_bytes(), "group-shapes-nested.pptx")
    assert parsed.text.startswith("## Slide 1\n\n")
    assert sorted(parsed.text.split("\n\n")[1:]) == list("ABCDEFGHIJ")


def test_a_table_slide() -> None:
    parsed = parse_file((REAL / "fake-power-point-table.pptx").read_bytes(), "fake-power-point-table.pptx")
    assert parsed.title == "A Slide with a Table"
    assert "| Purple | Orange | Yellow |" in parsed.text


def test_speaker_notes_follow_their_slide() -> None:
    pptx = pytest.importorskip("pptx")
    presentation = pptx.Presentation()
    for title, body, notes in [("Brakes", "Bleed every two years", "Mention DOT 4"), ("Tyres", "35 psi", "")]:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buffer = io.BytesIO()
    presentation.save(buffer)
    parsed = parse_file(buffer.getvalue(), "deck.pptx")
    assert parsed.text == "## Brakes\n\n- Bleed every two years\n\nNotes: Mention DOT 4\n\n## Tyres\n\n- 35 psi"
    assert parsed.metadata["slides_with_notes"] == 1
    assert parsed.title == "Brakes", "the first slide's title when the file's own title is a default"


def test_a_picture_only_deck_has_no_text() -> None:
    with pytest.raises(NoExtractableText):
        parse_file((REAL / "picture.pptx").read_bytes(), "picture.pptx")


def test_not_a_presentation_is_a_clear_400() -> None:
    with pytest.raises(InvalidInput, match="not a readable .pptx"):
        parse_file(b"PK\x03\x04 nothing", "broken.pptx")

from __future__ import annotations

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file
from tests.services.parsers.formats import REAL


def test_odt_paragraphs_and_table_in_order() -> None:
    parsed = parse_file((REAL / "fake.odt").read_bytes(), "fake.odt")
    assert parsed.source_type == "odt"
    assert parsed.text == (
        "Lorem ipsum dolor sit amet.\n\n"
        "| Header row | Mon | Wed | Fri |\n| --- | --- | --- | --- |\n| Color | Blue | Red | Green |\n"
        "| Time | 1pm | 2pm | 3pm |\n| Leader | Sarah | Mark | Ryan |"
    )
    assert parsed.metadata["table_count"] == 1


def test_odt_headings_and_lists() -> None:
    parsed = parse_file((REAL / "simple.odt").read_bytes(), "simple.odt")
    blocks = parsed.text.split("\n\n")
    assert blocks[0] == "# These are a few of my favorite things:"
    assert "- Hockey" in blocks
    assert blocks[-1] == "DOYLESTOWN, PA 18901"
    assert parsed.title == "These are a few of my favorite things:", "the first heading when the meta has no title"


def test_odt_that_is_not_a_package() -> None:
    with pytest.raises(InvalidInput, match="not a readable .odt"):
        parse_file(b"PK\x03\x04 nothing", "broken.odt")


def test_rtf_paragraphs_and_table() -> None:
    parsed = parse_file((REAL / "fake-doc.rtf").read_bytes(), "fake-doc.rtf")
    assert parsed.source_type == "rtf"
    assert parsed.text == (
        "My First Heading\n\nMy first paragraph.\n\nTable Example:\n\n"
        "| Column 1 | Column 2 |\n| --- | --- |\n| Row 1, Cell 1 | Row 1, Cell 2 |\n| Row 2, Cell 1 | Row 2, Cell 2 |"
    )


def test_rtf_code_page_and_unicode_escapes() -> None:
    data = rb"{\rtf1\ansi\ansicpg1251\deff0 {\pard \'cf\'f0\'e8\'e2\'e5\'f2 and caf\u233? ok\par}}"
    parsed = parse_file(data, "cyrillic.rtf")
    assert parsed.text == "Привет and café ok"
    assert parsed.metadata["encoding"] == "cp1251"


def test_not_rtf() -> None:
    with pytest.raises(InvalidInput, match="not an RTF document"):
        parse_file(b"hello", "plain.rtf")

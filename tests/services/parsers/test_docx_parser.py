from __future__ import annotations

import io
import zipfile

import pytest

from carrag.services.errors import InvalidInput, PayloadTooLarge
from carrag.services.parsers import parse_file
from carrag.services.parsers.archive import check_office_archive
from carrag.services.parsers.budget import ParseBudget
from tests.services.parsers.formats import REAL, fixture_bytes


def test_paragraphs_headings_and_tables_in_document_order() -> None:
    parsed = parse_file(fixture_bytes("workshop_notes.docx"), "workshop_notes.docx")
    assert parsed.source_type == "docx"
    assert parsed.title == "Aurora T-200 Workshop Notes"
    assert parsed.metadata == {"paragraph_count": 9, "table_count": 2, "title": "Aurora T-200 Workshop Notes"}
    blocks = parsed.text.split("\n\n")
    assert blocks[:4] == [
        "# Aurora T-200 Workshop Notes",
        "These notes cover the torque settings and the wear limits that the workshop checks at every service.",
        "# Torque settings",
        "Always use a calibrated torque wrench. The values below are for dry threads.",
    ]
    assert blocks[4] == (
        "| Part | Torque | Thread locker |\n| --- | --- | --- |\n| Stem bolts | 5 Nm | No |\n"
        "| Crank arm bolt | 40 Nm | Yes \\| blue |\n| Motor mount | 12 Nm | Yes |"
    )
    assert blocks[5] == "Check the motor mount again after the first 100 km.", "the table stays where it was"
    assert blocks[6:10] == [
        "# Wear limits",
        "## Chain",
        "- Replace the chain when it has stretched by 0.5 percent.",
        "- Replace the cassette with every second chain.",
    ]
    assert blocks[10] == "| Brake rotor minimum thickness |  |\n| --- | --- |\n| Front and rear | 1.5 mm |"


def test_real_document_with_nested_and_merged_tables() -> None:
    parsed = parse_file((REAL / "docx-tables.docx").read_bytes(), "docx-tables.docx")
    assert parsed.metadata["table_count"] == 3
    assert "| Header Col 1 | Header Col 2 |" in parsed.text
    assert "| d | e f g&t h | i |" in parsed.text, "a nested table's cells are kept inside the outer cell"
    assert parsed.text.count("| a | b |") == 1
    assert "Table with merged cells" in parsed.text


def test_not_a_zip_is_a_clear_400() -> None:
    with pytest.raises(InvalidInput, match="not a readable .docx file"):
        parse_file(b"PK\x03\x04 but not really a zip archive", "broken.docx")


def test_zip_without_a_document_is_a_clear_400() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "not a word document")
    with pytest.raises(InvalidInput, match="not a readable .docx file"):
        parse_file(buffer.getvalue(), "other.docx")


def test_encrypted_office_file_is_explained() -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512
    with pytest.raises(InvalidInput, match="password-protected or an old binary Office file"):
        parse_file(ole, "secret.docx")


def test_archives_that_expand_too_far_are_refused() -> None:
    data = fixture_bytes("workshop_notes.docx")
    check_office_archive(data, "workshop_notes.docx", ".docx")
    with pytest.raises(
        PayloadTooLarge, match="inflates to more than 1,000 bytes; the limit is 1,000 .MAX_ARCHIVE_BYTES."
    ):
        check_office_archive(data, "workshop_notes.docx", ".docx", ParseBudget(max_archive_bytes=1000))

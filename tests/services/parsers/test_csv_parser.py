from __future__ import annotations

import csv
import io

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file
from tests.services.parsers.formats import fixture_bytes


def test_quoted_fields_survive_and_blank_rows_are_dropped() -> None:
    parsed = parse_file(fixture_bytes("spare_parts.csv"), "spare_parts.csv")
    assert parsed.source_type == "csv"
    assert parsed.metadata == {"row_count": 6, "column_count": 4, "delimiter": ","}
    lines = parsed.text.split("\n")
    assert lines[0] == "part_number,name,price_eur,notes"
    assert lines[1] == 'BP-1050,Brake pad set,24.90,"Organic compound, fits front and rear"'
    assert '"Chain, 11-speed"' in parsed.text
    assert '"Tubeless ready; pressure ""1.8 bar"" for trails"' in parsed.text
    assert "\n\n" not in parsed.text
    # the text is itself valid CSV with the same cells as the file
    original = [row for row in csv.reader(io.StringIO(fixture_bytes("spare_parts.csv").decode(), newline="")) if row]
    assert list(csv.reader(io.StringIO(parsed.text, newline=""))) == original
    assert original[4][3] == "Multi-line note:\nships with a charging cable"


@pytest.mark.parametrize(
    ("raw", "delimiter"),
    [
        ('part;name;note\nBP-1050;Brake pad;"fits front; and rear"\nCH-0421;Chain;none\n', ";"),
        ("part\tname\tprice\nBP-1050\tBrake pad\t24.90\nCH-0421\tChain\t39.00\n", "\t"),
        ("part|name|price\nBP-1050|Brake pad|24.90\nCH-0421|Chain|39.00\n", "|"),
    ],
)
def test_dialect_is_sniffed_and_rewritten_with_commas(raw: str, delimiter: str) -> None:
    parsed = parse_file(raw.encode(), "parts.csv")
    assert parsed.metadata["delimiter"] == delimiter
    assert parsed.text.split("\n")[1].startswith("BP-1050,Brake pad,")
    assert parsed.metadata["row_count"] == 3 and parsed.metadata["column_count"] == 3


def test_single_column_and_bom() -> None:
    parsed = parse_file("\ufeffname\nBrake pad\nChain\n".encode(), "names.csv")
    assert parsed.text == "name\nBrake pad\nChain"


def test_oversized_field_is_a_clear_400() -> None:
    with pytest.raises(InvalidInput, match="not readable as CSV"):
        parse_file(b'a,b\n"' + b"x" * 200_000 + b'",1\n', "huge.csv")


def test_binary_named_csv_is_refused() -> None:
    with pytest.raises(InvalidInput, match="binary"):
        parse_file(bytes(range(256)) * 4, "data.csv")

from __future__ import annotations

import json

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.parsers import parse_file
from carrag.services.parsers.json_document import MAX_JSON_DEPTH
from tests.services.parsers.formats import fixture_bytes


def test_pretty_printed_with_two_spaces_and_unicode_kept() -> None:
    raw = fixture_bytes("service_schedule.json")
    parsed = parse_file(raw, "service_schedule.json")
    assert parsed.text == json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    assert parsed.text.startswith('{\n  "model": "Aurora T-200",\n  "intervals": [\n    {\n      "every_km": 500,')
    assert "Garantie nur mit Stempel" in parsed.text and "—" in parsed.text
    assert parsed.source_type == "json"
    assert parsed.metadata == {"json_type": "object", "nesting_depth": 4, "line_count": 31, "item_count": 3}


def test_scalar_document() -> None:
    parsed = parse_file(b"42", "answer.json")
    assert parsed.text == "42" and parsed.metadata["json_type"] == "number"


def test_invalid_json_names_the_position() -> None:
    with pytest.raises(InvalidInput, match=r"not valid JSON \(Expecting ',' delimiter: line 1 column 13"):
        parse_file(b'{"a": [1, 2 3]}', "broken.json")


@pytest.mark.parametrize("depth", [100_000, 2_000, MAX_JSON_DEPTH + 1])
def test_deep_nesting_is_a_clear_400_not_a_crash(depth: int) -> None:
    with pytest.raises(InvalidInput, match=f"nested more than {MAX_JSON_DEPTH} levels"):
        parse_file(b"[" * depth + b"]" * depth, "deep.json")


def test_nesting_up_to_the_limit_is_accepted() -> None:
    parsed = parse_file(b'{"a":' * (MAX_JSON_DEPTH - 1) + b"[1]" + b"}" * (MAX_JSON_DEPTH - 1), "deep.json")
    assert parsed.metadata["nesting_depth"] == MAX_JSON_DEPTH
    assert parsed.text.count("\n") > MAX_JSON_DEPTH


def test_integer_too_long_to_convert_is_a_400() -> None:
    with pytest.raises(InvalidInput, match="not valid JSON"):
        parse_file(b"[" + b"9" * 5000 + b"]", "big.json")

from __future__ import annotations

from carrag.services.answers.values import Value, has_date, has_measure, unsupported_values, values


def test_signs_formats_and_units_are_read() -> None:
    assert values("-32768 to +32767") == [Value(-32768), Value(32767)]
    assert values("1,000 ms and 10% of 2.5 GB") == [Value(1000, "ms"), Value(10, "%"), Value(2.5, "gb")]
    assert values("x-1 and 2-3") == [Value(1), Value(2), Value(3)], "a hyphen joining words or numbers is no sign"
    assert values("released 2024-06-30") == [Value(20240630)], "an ISO date is one value"
    assert values("kept for thirty days", spelled=True) == [Value(30, "day")]


def test_a_claim_must_hold_the_sources_values() -> None:
    source = "The smallint range is -32768 to +32767; it takes 2 bytes; snapshots are kept thirty days."
    assert unsupported_values("from 1 to 32768", source) == [Value(1), Value(32768)]
    assert unsupported_values("from -32768 to 32767", source) == []
    assert unsupported_values("it takes 2 KB", source) == [Value(2, "kb")]
    assert unsupported_values("it takes 2 bytes and keeps 30 days", source) == []
    assert unsupported_values("one of the types", source) == [], "spelled numbers are not demanded of a claim"


def test_measures_and_dates() -> None:
    assert has_measure("times out after 30 seconds") and not has_measure("version 3")
    assert has_date("released in March 2019") and has_date("on 2024-06-30") and not has_date("version 1.2")

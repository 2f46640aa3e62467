from __future__ import annotations

from carrag.services.chunking import chunk_document, default_strategy
from carrag.services.chunking.code import chunk_code
from carrag.services.parsers import parse_file

PYTHON = '''"""Tyre tools."""

import math

PRESSURE = 35


def to_bar(psi: float) -> float:
    """Convert."""
    return psi * 0.0689476


class Gauge:
    """A tyre gauge."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.readings: list[float] = []

    def read(self, value: float) -> float:
        # Record, then convert when the gauge shows bar.
        self.readings.append(value)
        return to_bar(value) if self.unit == "bar" else value

    @property
    def average(self) -> float:
        return sum(self.readings) / max(len(self.readings), 1)
'''

SQL = """-- schema
CREATE TABLE cars (id INTEGER PRIMARY KEY, make TEXT NOT NULL, model TEXT NOT NULL);
CREATE INDEX cars_make ON cars(make);
INSERT INTO cars(make, model) VALUES ('Ford', 'F-150');
SELECT make, count(*) FROM cars GROUP BY make;
"""


def test_python_splits_between_definitions_and_keeps_decorators_and_comments() -> None:
    chunks = chunk_code(PYTHON, 250, 0)
    for chunk in chunks:
        assert PYTHON[chunk.char_start : chunk.char_end] == chunk.text
    unit_starts = ('"""', "def ", "class ", "@property", "import ", "PRESSURE")
    assert all(chunk.text.startswith(unit_starts) for chunk in chunks), "no chunk starts inside a definition"
    assert any("class Gauge:" in chunk.text for chunk in chunks)
    assert any(chunk.text.startswith("def read(") for chunk in chunks), "a long class splits into its methods"
    average = next(chunk for chunk in chunks if "def average" in chunk.text)
    assert average.text.startswith("@property\n    def average"), "a decorator stays with its definition"
    assert average.section == "class Gauge > def average"
    read = next(chunk for chunk in chunks if chunk.text.startswith("def read("))
    assert "# Record, then convert" in read.text and read.section == "class Gauge > def read"
    assert all(len(chunk.text) <= 250 for chunk in chunks)


def test_small_file_is_one_chunk_and_code_never_splits_mid_line_when_lines_fit() -> None:
    assert [c.text for c in chunk_code(PYTHON, 5000, 0)] == [PYTHON.strip()]
    for chunk in chunk_code(PYTHON, 120, 30):
        assert chunk.char_start == 0 or PYTHON[chunk.char_start - 1] == "\n" or PYTHON[chunk.char_start - 1] == " "


def test_sql_statements_are_units() -> None:
    chunks = chunk_code(SQL, 100, 0)
    assert len(chunks) > 1
    assert all(chunk.text.startswith(("--", "CREATE", "INSERT", "SELECT")) for chunk in chunks)
    for statement in SQL.splitlines()[1:]:
        assert any(statement in chunk.text for chunk in chunks), f"{statement!r} was split"
    assert chunks[1].section and chunks[1].section.startswith("CREATE INDEX")


def test_source_files_default_to_code_chunking_unless_the_request_says_otherwise() -> None:
    parsed = parse_file(PYTHON.encode(), "tools/gauge.py")
    assert parsed.source_type == "code" and parsed.metadata["language"] == "python"
    assert default_strategy(parsed, "recursive") == "code"
    assert default_strategy(parse_file(b"plain words", "notes.txt"), "recursive") == "recursive"
    code_chunks = chunk_document(parsed, "code", 250, 0)
    assert [c.section for c in code_chunks] == [c.section for c in chunk_code(PYTHON, 250, 0)]


def test_yaml_and_toml_split_on_top_level_keys_and_tables() -> None:
    toml = '[project]\nname = "carrag"\nversion = "0.1.0"\n\n[tool.ruff]\nline-length = 120\n\n[tool.pytest]\nx = 1\n'
    chunks = chunk_code(toml, 50, 0)
    assert [chunk.text.splitlines()[0] for chunk in chunks] == ["[project]", "[tool.ruff]", "[tool.pytest]"]
    assert chunks[1].section == "[tool.ruff]"
    yaml = "services:\n  api:\n    image: carrag\n  es:\n    image: elasticsearch\nvolumes:\n  data: {}\n"
    chunks = chunk_code(yaml, 50, 0)
    assert chunks[0].text.startswith("services:") and chunks[-1].text.startswith("volumes:")

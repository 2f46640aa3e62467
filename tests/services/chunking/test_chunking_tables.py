"""A chunk that starts inside a Markdown table repeats the table's header row (issue 27)."""

from __future__ import annotations

import pytest

from carrag.services.chunking import chunk_document
from carrag.services.chunking.tables import PipeTables
from carrag.services.models import ParsedDocument
from carrag.services.vocabulary import ChunkingStrategy
from tests.services.chunking.chunk_checks import assert_chunk_invariants

HEADER = "| Model | Towing capacity (kg) | Fuel tank (l) |\n| --- | ---: | ---: |\n"
ROWS = "".join(f"| Truck {n} | {1000 + 50 * n} | {60 + n} |\n" for n in range(40))
DOCUMENT = f"# Specifications\n\nThe towing figures of every model.\n\n{HEADER}{ROWS}\nNotes after the table.\n"


@pytest.mark.parametrize(
    "strategy",
    [ChunkingStrategy.RECURSIVE, ChunkingStrategy.MARKDOWN, ChunkingStrategy.PARAGRAPH, ChunkingStrategy.SENTENCE],
)
@pytest.mark.parametrize("overlap", [0, 60])
def test_chunks_starting_in_a_table_begin_with_its_header_row(strategy: ChunkingStrategy, overlap: int) -> None:
    document = ParsedDocument(text=DOCUMENT, filename="specs.md", source_type="text")
    chunks = chunk_document(document, strategy, 300, overlap)
    assert_chunk_invariants(DOCUMENT, chunks, 300)
    table_start = DOCUMENT.index(HEADER)
    in_table = [c for c in chunks if table_start + len(HEADER) <= c.char_start < table_start + len(HEADER + ROWS)]
    assert len(in_table) >= 3
    for chunk in in_table:
        assert chunk.text.startswith(HEADER), chunk.text[:80]
        first_row = chunk.text[len(HEADER) :].split("\n", 1)[0]
        assert first_row.startswith("| Truck ") and first_row.endswith(" |"), "a chunk starts at a whole row"
    outside = [c for c in chunks if c not in in_table]
    assert all(not c.text.startswith(HEADER) or c.char_start == table_start for c in outside)


def test_every_row_is_in_a_chunk_once_without_overlap() -> None:
    document = ParsedDocument(text=DOCUMENT, filename="specs.md", source_type="text")
    chunks = chunk_document(document, ChunkingStrategy.RECURSIVE, 200, 0)
    rows = [line for chunk in chunks for line in chunk.text.splitlines() if line.startswith("| Truck")]
    assert rows == ROWS.splitlines()


def test_a_header_longer_than_half_the_chunk_is_not_repeated() -> None:
    wide = "| " + " | ".join(f"column {n}" for n in range(12)) + " |\n|" + " --- |" * 12 + "\n"
    text = wide + "".join("| " + " | ".join(str(n) * 3 for _ in range(12)) + " |\n" for n in range(30))
    assert PipeTables(text, 200).tables == []
    chunks = chunk_document(ParsedDocument(text, "t.md", "text"), ChunkingStrategy.RECURSIVE, 200, 0)
    assert sum(chunk.text.startswith("| column 0 |") for chunk in chunks) == 1


def test_what_is_a_table() -> None:
    text = "a | b\n--- | ---\n1 | 2\n\n| x | y |\n| --- |\n| 1 | 2 |\n\n| p | q |\n|---|---|\n"
    tables = PipeTables(text, 500).tables
    assert [table.header for table in tables] == ["a | b\n--- | ---\n"], "delimiter cells must match; a body is needed"
    assert text[tables[0].body_start : tables[0].body_end] == "1 | 2\n"


def test_a_row_longer_than_the_chunk_is_split_and_each_piece_keeps_the_header() -> None:
    long_row = "| " + "word " * 120 + "| 1 |\n"
    text = "| Text | N |\n| --- | --- |\n" + long_row + "| short | 2 |\n"
    chunks = chunk_document(ParsedDocument(text, "t.md", "text"), ChunkingStrategy.RECURSIVE, 150, 20)
    assert_chunk_invariants(text, chunks, 150)
    assert all(chunk.text.startswith("| Text | N |\n| --- | --- |\n") for chunk in chunks)

from __future__ import annotations

from carrag.services.answers.sentences import split_sentences
from carrag.services.answers.tables import align, fields, read_rows

PIVOT = (
    "## Pivot table\n\n| Year | Quarter | Month | Revenue | Cost |\n| --- | --- | --- | --- | --- |\n"
    "| 2025 | Q1 |\n| January | $134 | $162 |\n| Q2 |\n| May | $280 | $120 |"
)


def readings(text: str) -> dict[str, str]:
    return {sentence.text: reading.display() for sentence, reading in read_rows(text, split_sentences(text)).items()}


def test_markdown_and_csv_rows_split_into_cells() -> None:
    assert fields("| Wood Duck |  | Often seen near ponds. |") == ["Wood Duck", "", "Often seen near ponds."]
    assert fields('Zone NA,12553,"January–June 2023"') == ["Zone NA", "12553", "January–June 2023"]


def test_a_markdown_row_reads_with_its_column_names_and_an_empty_cell_says_nothing() -> None:
    text = "Basic duck facts\n\n| Name | Habitat |\n| --- | --- |\n| Wood Duck |  |\n| Mallard | Ponds, lakes |"
    assert readings(text) == {
        "| Name | Habitat |": "Name; Habitat",
        "| Wood Duck | |": "Name: Wood Duck",
        "| Mallard | Ponds, lakes |": "Name: Mallard; Habitat: Ponds, lakes",
    }


def test_merged_cells_of_a_pivot_table_are_carried_down() -> None:
    shown = readings(PIVOT)
    assert shown["| May | $280 | $120 |"] == "Year: 2025; Quarter: Q2; Month: May; Revenue: $280; Cost: $120"
    assert shown["| January | $134 | $162 |"] == "Year: 2025; Quarter: Q1; Month: January; Revenue: $134; Cost: $162"
    assert shown["| Q2 |"] == "Year: 2025; Quarter: Q2"


def test_align_places_group_labels_over_the_leading_columns() -> None:
    names = ["Year", "Month", "Revenue"]
    assert align(names, [["2025"], ["May", "$280"]]) == [("2025", "", ""), ("2025", "May", "$280")]


def test_a_passage_that_begins_inside_a_table_has_no_header_row() -> None:
    text = "| `tesserocr` | Installs the Tesseract binding. |\n| `ocrmac` | Installs the OcrMac OCR engine. |"
    rows = read_rows(text, split_sentences(text))
    assert all(not reading.names and not reading.is_header for reading in rows.values())


def test_a_header_without_separator_after_a_title_still_names_the_columns() -> None:
    text = "Securities registered:\n\n| Title of each class |  | Trading symbol |\n| Common stock |  | GLXZ |"
    assert readings(text)["| Common stock | | GLXZ |"] == "Title of each class: Common stock; Trading symbol: GLXZ"


def test_one_line_with_commas_is_a_sentence_not_a_table() -> None:
    text = "A policy should\nminimally address three things: confidentiality, integrity, and availability."
    assert read_rows(text, split_sentences(text)) == {}


def test_a_blank_line_ends_a_table() -> None:
    text = "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n| c | d |\n| --- | --- |\n| 3 | 4 |"
    shown = readings(text)
    assert shown["| 3 | 4 |"] == "c: 3; d: 4"


def test_a_passage_that_begins_inside_a_row_has_no_header_row() -> None:
    """The chunk began in the middle of a settings table's row: the next row is data, not column names."""
    text = (
        "Source files use `code` unless the request names a strategy. |\n"
        "| `MARKDOWN_CHUNKING_FOR_MARKUP` | `true` | Markdown files are chunked by headers. |\n"
        "| `MIN_CHUNK_SIZE` | `100` | A trailing chunk shorter than this is merged. |"
    )
    rows = read_rows(text, split_sentences(text))
    assert rows and all(not reading.names and not reading.is_header for reading in rows.values())


def test_a_table_after_another_table_and_a_blank_line_has_its_header() -> None:
    text = "| - | N/mm 2 |\n| Bars | **890** |\n\n| - | Brinell HBW / HB |\n| SNB22-3 | **293-375** |"
    assert readings(text)["| SNB22-3 | **293-375** |"] == "-: SNB22-3; Brinell HBW / HB: **293-375**"

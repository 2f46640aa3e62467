from __future__ import annotations

from carrag.services.answers.sentences import code_spans, is_table_line, split_sentences

MANUAL = """2019 Ford F-150 Owner's Manual
Engine oil
Check the engine oil level every month. Use a Motorcraft FL-500S oil
filter for the 3.5L engine, e.g. the EcoBoost. Change the oil every 7,500 miles.

name,size,price
Duck,large,12.50
- item one
- item two"""


def test_offsets_point_at_the_sentence_in_the_passage() -> None:
    for sentence in split_sentences(MANUAL):
        assert " ".join(MANUAL[sentence.start : sentence.end].split()) == sentence.text


def test_wrapped_lines_abbreviations_headings_tables_and_lists() -> None:
    texts = [s.text for s in split_sentences(MANUAL)]
    assert texts == [
        "2019 Ford F-150 Owner's Manual",
        "Engine oil",
        "Check the engine oil level every month.",
        "Use a Motorcraft FL-500S oil filter for the 3.5L engine, e.g. the EcoBoost.",
        "Change the oil every 7,500 miles.",
        "name,size,price",
        "Duck,large,12.50",
        "- item one",
        "- item two",
    ]
    assert [s.is_table_row for s in split_sentences(MANUAL)][5:7] == [True, True]


def test_a_sentence_with_commas_and_thousands_is_not_a_table_row() -> None:
    assert not is_table_line("filter for the 3.5L engine, e.g. the EcoBoost. Change it every 7,500 miles, or so.")
    assert is_table_line("2023,Q2,Segment A,1.28")
    assert is_table_line("| Year | Revenue |")


def test_long_units_are_cut() -> None:
    text = "; ".join(f"clause number {i} of a very long statement" for i in range(40))
    assert all(len(s.text) <= 401 for s in split_sentences(text))


def test_a_wrapped_pdf_line_with_two_commas_stays_inside_its_sentence() -> None:
    pdf = (
        "Search engines rank pages with simple models, where classic term weighting\n"
        "schemes, such as TF-IDF or BM25, are the\n"
        "usual choice.\n"
        "Learned models came later."
    )
    sentences = split_sentences(pdf)
    assert [s.text for s in sentences] == [
        "Search engines rank pages with simple models, where classic term weighting schemes, such as TF-IDF or "
        "BM25, are the usual choice.",
        "Learned models came later.",
    ]
    assert not any(s.is_table_row for s in sentences)


def test_comma_separated_lines_next_to_each_other_are_table_rows() -> None:
    sheet = "Sheet: Prices\nitem,size,price\nduck,large,12.50\nfrog,small,3.10"
    rows = [s for s in split_sentences(sheet) if s.is_table_row]
    assert [s.text for s in rows] == ["item,size,price", "duck,large,12.50", "frog,small,3.10"]


def test_a_form_label_and_its_value_are_one_unit() -> None:
    form = "Receipt\n\nCashier\nLena Park\n\nTable\n12\n\nThank you for dining with us.\nSee you soon."
    assert [s.text for s in split_sentences(form)] == [
        "Receipt",
        "Cashier Lena Park",
        "Table 12",
        "Thank you for dining with us.",
        "See you soon.",
    ]


def test_a_numbered_form_field_is_one_unit() -> None:
    """An HTML key-value form: each field's marker, label and value on lines of their own."""
    form = "Receipt details:\n1\nRestaurant\nDocling\n2\nServer\nQuack Quackling\n3\nSeating\n13\nOrder items:"
    texts = [s.text for s in split_sentences(form)]
    assert "Server Quack Quackling" in texts and "Restaurant Docling" in texts


def test_a_code_fence_line_is_never_part_of_a_sentence() -> None:
    """The prose after a closing fence began at the fence, inside the code block, and was left out as code."""
    text = (
        "- install the `chunking` extra for HuggingFace tokenizers, e.g.\n"
        "    ```shell\n    pip install 'docling-core[chunking]'\n    ```\n"
        "    or the `chunking-openai` extra if you prefer Open AI tokenizers, e.g.\n"
        "    ```shell\n    pip install 'docling-core[chunking-openai]'\n    ```"
    )
    prose = [s for s in split_sentences(text) if not any(a <= s.start < b for a, b in code_spans(text))]
    assert "or the `chunking-openai` extra if you prefer Open AI tokenizers, e.g." in [s.text for s in prose]


def test_prose_wrapped_before_a_name_is_one_sentence() -> None:
    """A plain-text book wraps at ~70 characters: a line ending before a capitalised name is not a title line."""
    text = (
        "It was in July, 1805, and the speaker was the well-known Anna Pavlovna\n"
        "Scherer, maid of honor and favorite of the Empress Marya Fedorovna. With\n"
        "these words she greeted Prince Vasili Kuragin, a man of high rank and\n"
        "importance, who was the first to arrive at her reception."
    )
    assert [s.text for s in split_sentences(text)][0] == (
        "It was in July, 1805, and the speaker was the well-known Anna Pavlovna Scherer, maid of honor and "
        "favorite of the Empress Marya Fedorovna."
    )


def test_a_long_caption_between_short_lines_stays_a_line_of_its_own() -> None:
    text = (
        "shown in Example 2-1.\nExample 2-1 Query to determine who has authority to define and manage RCAC\nSELECT id,"
    )
    assert "Example 2-1 Query to determine who has authority to define and manage RCAC" in [
        s.text for s in split_sentences(text)
    ]

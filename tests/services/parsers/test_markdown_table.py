from __future__ import annotations

from carrag.services.parsers.markdown_table import markdown_table


def test_rows_under_the_header_padded_and_a_pipe_in_a_cell_escaped() -> None:
    assert markdown_table([["Operator", "Meaning"], ["a | b", "bitwise or"], ["x"]]) == (
        "| Operator | Meaning |\n| --- | --- |\n| a \\| b | bitwise or |\n| x |  |"
    )
    assert markdown_table([]) == ""

"""Answer units read from how documents hold facts: sentences joined across line breaks, table rows with
their header, list items with their lead-in, definitions, commands, records; plain text quoted."""

from __future__ import annotations

from carrag.services.answers.units import looks_like_code, plain, read_units

MANUAL = """2019 Ford F-150 Owner's Manual
Engine oil
Check the engine oil level every month. Use a Motorcraft FL-500S oil
filter for the 3.5L engine, e.g. the EcoBoost. Change the oil every 7,500 miles.

name,size,price
Duck,large,12.50
Frog,small,3.10"""


def displays(text: str, kind: str | None = None) -> list[str]:
    return [unit.display for unit in read_units(text) if kind is None or unit.kind == kind]


def test_offsets_point_at_the_unit_in_the_passage() -> None:
    for unit in read_units(MANUAL):
        assert (
            plain(MANUAL[unit.start : unit.end]).replace(",", "") in unit.display.replace(",", "").replace(";", "")
            or unit.cells
        )


def test_wrapped_lines_abbreviations_titles_and_csv_rows() -> None:
    assert displays(MANUAL) == [
        "2019 Ford F-150 Owner's Manual",
        "Engine oil",
        "Check the engine oil level every month.",
        "Use a Motorcraft FL-500S oil filter for the 3.5L engine, e.g. the EcoBoost.",
        "Change the oil every 7,500 miles.",
        "name: Duck; size: large; price: 12.50",
        "name: Frog; size: small; price: 3.10",
    ]


def test_a_sentence_broken_across_lines_keeps_its_value() -> None:
    """The issue's example: "...any value in the range" / "-1000 to 1000." was quoted up to the break."""
    text = "The priority may be set to any value in the range\n-1000 to 1000. Higher values run first."
    assert displays(text)[0] == "The priority may be set to any value in the range -1000 to 1000."


def test_a_wrapped_pdf_line_with_two_commas_stays_inside_its_sentence() -> None:
    pdf = (
        "Search engines rank pages with simple models, where classic term weighting\n"
        "schemes, such as TF-IDF or BM25, are the\n"
        "usual choice.\n"
        "Learned models came later."
    )
    assert displays(pdf) == [
        "Search engines rank pages with simple models, where classic term weighting schemes, such as TF-IDF or "
        "BM25, are the usual choice.",
        "Learned models came later.",
    ]


def test_markdown_table_rows_are_read_with_their_column_names() -> None:
    text = (
        "Numeric types\n\n| Type | Storage | Range |\n|---|---|---|\n"
        "| smallint | 2 bytes | -32768 to +32767 |\n| integer | 4 bytes | -2147483648 to +2147483647 |"
    )
    rows = [unit for unit in read_units(text) if unit.kind == "row"]
    assert [row.display for row in rows] == [
        "Type: smallint; Storage: 2 bytes; Range: -32768 to +32767",
        "Type: integer; Storage: 4 bytes; Range: -2147483648 to +2147483647",
    ]
    assert rows[0].label == "Numeric types", "the line before a table is its title"
    assert text[rows[0].start : rows[0].end] == "| smallint | 2 bytes | -32768 to +32767 |"


def test_a_short_csv_row_lacks_its_trailing_fields() -> None:
    text = "version,codename,release,eol\n1.1,Buzz,1996-06-17,1997-06-05\n14,Forky"
    assert displays(text, "row")[-1] == "version: 14; codename: Forky"


def test_list_items_carry_their_lead_in_and_the_list_is_a_unit_too() -> None:
    text = "The nut comes in the following three classes:\n\n- all-metal\n- fiber lock\n- bellows type\n\nEnd."
    assert displays(text, "item") == [
        "The nut comes in the following three classes: all-metal",
        "The nut comes in the following three classes: fiber lock",
        "The nut comes in the following three classes: bellows type",
    ]
    assert displays(text, "list") == [
        "The nut comes in the following three classes: all-metal; fiber lock; bellows type"
    ]


def test_a_wrapped_list_item_is_one_item() -> None:
    text = "HAProxy is not :\n\n  - a data scrubber : it will not modify the body of requests nor\n    responses.\n  - a static web server."
    assert (
        displays(text, "item")[0]
        == "HAProxy is not : a data scrubber : it will not modify the body of requests nor responses."
    )


def test_man_page_options_are_definitions() -> None:
    text = (
        "OPTIONS\n"
        "       -b bind_address\n"
        "              Use bind_address on the local machine as the source address of\n"
        "              the connection. Only useful on systems with more than one address.\n\n"
        "       -C     Requests compression of all data."
    )
    units = read_units(text)
    definitions = [unit for unit in units if unit.kind == "definition"]
    assert definitions[0].display == (
        "-b bind_address: Use bind_address on the local machine as the source address of the connection."
    )
    assert definitions[0].heading == "OPTIONS"
    assert [unit.display for unit in units if unit.kind == "command"] == ["-C — Requests compression of all data."]


def test_html_description_lists_are_definitions() -> None:
    text = "Coffee\n:   Black hot drink\n\nformat_field(value, spec)¶\n:   `format_field()` simply calls the global\n    `format()` built-in. It can be overridden."
    assert displays(text, "definition") == [
        "Coffee: Black hot drink",
        "format_field(value, spec): format_field() simply calls the global format() built-in.",
        "format_field(value, spec): It can be overridden.",
    ]


def test_a_reference_card_command_is_quoted_with_its_description() -> None:
    """A cheat-sheet PDF: the command on the line before its description."""
    text = "Package queries\ndpkg -S /usr/bin/ls\nShow which package a file belongs to\ndpkg -L pkg\nList the files of a package"
    assert displays(text, "command") == [
        "dpkg -S /usr/bin/ls — Show which package a file belongs to",
        "dpkg -L pkg — List the files of a package",
    ]


def test_a_command_and_its_description_on_one_line() -> None:
    text = "Let's break this down:\n    e\t\tMove to the end of the word.\n\n    a}<Esc>\tAppend the } to the word."
    assert displays(text, "command") == ["e — Move to the end of the word.", "a}<Esc> — Append the } to the word."]


def test_code_blocks_keep_the_line_announcing_them() -> None:
    text = (
        "To add an extension pass a list of classes::\n\n    env = Environment(extensions=['jinja2.ext.i18n'])\n\nDone."
    )
    code = [unit for unit in read_units(text) if unit.kind == "code"]
    assert code[0].text == "env = Environment(extensions=['jinja2.ext.i18n'])"
    assert code[0].label.startswith("To add an extension pass a list of classes")
    fenced = "Install it:\n\n```shell\npip install carrag\n```"
    assert [unit.display for unit in read_units(fenced) if unit.kind == "code"] == ["Install it: pip install carrag"]


def test_a_bare_fence_after_a_blank_line_opens_a_block_and_is_no_rule() -> None:
    # "```" once read as a rule: the block's closing fence then opened a code block over the text after it
    text = "The grammar is:\n\n```\nwidth ::= digit+\n```\n\nThe width is a decimal integer. It is optional."
    assert displays(text, "sentence")[-2:] == ["The width is a decimal integer.", "It is optional."]
    assert displays(text, "code") == ["The grammar is: width ::= digit+"]


def test_a_passage_that_begins_inside_a_fenced_block_is_read_after_its_closing_fence() -> None:
    text = "x = compute(1)\nprint(x)\n```\n\nThe function returns the sum of its arguments.\n\n```python\ny = 2\n```"
    assert displays(text, "sentence") == ["The function returns the sum of its arguments."]
    assert [unit.text for unit in read_units(text) if unit.kind == "code"] == ["x = compute(1)\nprint(x)", "y = 2"]


def test_a_table_inside_a_blockquote_is_read_as_rows() -> None:
    text = (
        "The alignment options:\n\n> | Option | Meaning |\n> | --- | --- |\n"
        "> | '<' | Left-aligned. |\n> | '^' | Centered within the available space. |"
    )
    assert displays(text, "row") == [
        "Option: '<'; Meaning: Left-aligned.",
        "Option: '^'; Meaning: Centered within the available space.",
    ]


def test_a_preformatted_text_document_is_read_as_prose() -> None:
    text = "```\nHAProxy is an event-driven, non-blocking engine combining a very fast I/O layer\nwith a scheduler. It runs many proxies in one process.\n```"
    assert displays(text) == [
        "HAProxy is an event-driven, non-blocking engine combining a very fast I/O layer with a scheduler.",
        "It runs many proxies in one process.",
    ]


def test_json_members_are_a_record() -> None:
    text = '{\n  "4217": [\n    {\n      "alpha_3": "AED",\n      "name": "UAE Dirham",\n      "numeric": "784"\n    },'
    assert displays(text, "record") == ["alpha_3: AED; name: UAE Dirham; numeric: 784"]


def test_a_form_label_and_its_value_are_one_record() -> None:
    form = "Receipt\n\nCashier\nLena Park\n\nTable\n12\n\nThank you for dining with us.\nSee you soon."
    assert displays(form) == [
        "Receipt",
        "Cashier: Lena Park",
        "Table: 12",
        "Thank you for dining with us.",
        "See you soon.",
    ]


def test_headings_are_context_not_units() -> None:
    text = "# Config\n\n## Ports\n\nThe server listens on port 8080.\n\nPorts\n=====\n\nThe admin port is 9090."
    units = read_units(text)
    assert [(unit.heading, unit.display) for unit in units] == [
        ("Ports", "The server listens on port 8080."),
        ("Ports", "The admin port is 9090."),
    ]


def test_quoted_text_is_plain() -> None:
    assert plain("**NULL** is `SQLITE\\_MAX\\_LENGTH` in [the docs](https://x.org) and *the* {func}`option`") == (
        "NULL is SQLITE_MAX_LENGTH in the docs and the option"
    )
    assert (
        plain("The _Black_ code style, see :class:`~jinja2.Environment`¶")
        == "The Black code style, see jinja2.Environment"
    )


def test_long_units_are_cut() -> None:
    text = "; ".join(f"clause number {i} of a very long statement" for i in range(40))
    assert all(len(unit.text) <= 401 for unit in read_units(text))


def test_code_lines_are_told_from_prose() -> None:
    assert looks_like_code("dpkg -S file")
    assert looks_like_code("> z <- zoo(1:8)")
    assert looks_like_code("\\DeclareDocumentCommand\\caption")
    assert not looks_like_code("The option() decorator is usually passed two positional arguments: the")
    assert not looks_like_code("Use DOT 4 LV brake fluid.")

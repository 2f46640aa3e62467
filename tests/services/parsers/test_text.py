from __future__ import annotations

import pytest

from carrag.services.errors import EmptyDocument, InvalidInput, UnsupportedFormat
from carrag.services.parsers import parse_file
from carrag.services.parsers.text import parse_text


def test_utf8_with_line_count() -> None:
    parsed = parse_file("# Title\n\nCafé crème.\nSecond line\n".encode(), "notes.md")
    assert parsed.text.startswith("# Title") and "Café" in parsed.text
    assert parsed.metadata == {"line_count": 4, "markup": "markdown", "title": "Title"}
    assert parsed.source_type == "text" and parsed.title == "Title"


def test_markdown_title_is_the_first_h1_outside_code_fences() -> None:
    text = "Intro line\n\n```\n# not a heading\n```\n\n## Sub\n\n# Real Title #\n\nBody\n"
    parsed = parse_file(text.encode(), "guide.markdown")
    assert parsed.title == "Real Title"
    assert parse_file(b"no heading here", "plain.md").title is None
    assert parse_file(b"# Heading in a txt", "plain.txt").title is None, "only Markdown files take a title"


def test_a_title_is_the_heading_as_read_without_its_markup() -> None:
    assert parse_file(b"# The _Black_ code style\n\ntext", "black.md").title == "The Black code style"
    assert (
        parse_file(b"# `struct` **packing** [docs](https://x.org) usr\\_05\n", "s.md").title
        == "struct packing docs usr_05"
    )
    assert parse_file(b"# my_var_name\n", "v.md").title == "my_var_name", "underscores inside a word are not emphasis"
    html = b"<html><body><h1>The <em>Black</em> code style</h1><p>Black formats code.</p></body></html>"
    assert parse_file(html, "black.html").title == "The Black code style"


def test_invalid_utf8_bytes_are_replaced() -> None:
    parsed = parse_file(b"valid text \xff\xfe here and more valid text to keep the ratio low", "bad.txt")
    assert "\ufffd" in parsed.text and "valid text" in parsed.text


@pytest.mark.parametrize("name", ["a.txt", "a.text", "a.md", "a.markdown", "A.MD"])
def test_text_extensions(name: str) -> None:
    assert parse_file(b"hello world", name).text == "hello world"


def test_binary_data_named_txt_is_refused() -> None:
    with pytest.raises(InvalidInput, match="binary"):
        parse_file(bytes(range(256)) * 10, "image.txt")


def test_empty_file() -> None:
    with pytest.raises(EmptyDocument):
        parse_file(b"", "empty.txt")


def test_whitespace_only_file_has_no_text() -> None:
    with pytest.raises(InvalidInput, match="no extractable text"):
        parse_file(b"  \n\n\t ", "blank.txt")


@pytest.mark.parametrize("name", ["virus.exe", "noextension", "archive.tar.gz"])
def test_unsupported_extensions(name: str) -> None:
    with pytest.raises(UnsupportedFormat, match="Unsupported file type"):
        parse_file(b"data", name)


def test_utf16_with_bom() -> None:
    parsed = parse_file("Hello UTF-16 world".encode("utf-16"), "wide.txt")
    assert parsed.text == "Hello UTF-16 world"


def test_a_manual_page_rendered_to_text_has_its_line_break_hyphens_joined_and_ascii_option_dashes() -> None:
    page = (
        "     BindAddress\n"
        "             Use the specified address as the source address of the con\u2010\n"
        "             nection.  See also the \u2010b option of ssh(1) and the run\u2010time\n"
        "             checks.  A run\u2010\n"
        "             time check is cheap.\n"
    ).encode()
    text = parse_text(page, "ssh_config.5.txt").text
    assert "source address of the connection." in text
    assert "the -b option" in text
    assert "A run-time check" in text, "the document writes run-time with a hyphen: the break keeps it"
    assert "\u2010" not in text
    assert parse_text(b"a plain -\nlist stays as written", "notes.txt").text == "a plain -\nlist stays as written"


def test_html_tables_in_a_markdown_file_are_read_as_markdown_rows_but_code_fences_are_kept() -> None:
    markdown = (
        "# Models\n\nThe stages:\n\n"
        "<table>\n  <tr><th>Stage</th><th>Model</th></tr>\n"
        "  <tr><td><strong>Layout</strong></td><td><code>heron</code></td></tr>\n</table>\n\n"
        "```html\n<table><tr><td>an example</td></tr></table>\n```\n"
    )
    parsed = parse_file(markdown.encode(), "models.md")
    assert "| Stage | Model |" in parsed.text and "| **Layout** | `heron` |" in parsed.text
    assert "<tr><th>" not in parsed.text
    assert "```html\n<table><tr><td>an example</td></tr></table>\n```" in parsed.text
    assert parsed.title == "Models"

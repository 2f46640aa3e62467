"""`carrag documents list --sort/--order/--filename`, with GET /documents' names and meaning, on the
local store and against a running server; bad values are usage errors naming the option."""

# ruff: noqa: F811  (fixtures of the CLI suite, imported, are parameters here)
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import API_KEY, carrag, local_env, server, workdir  # noqa: F401


def listed_sources(env: dict[str, str | None], *args: str) -> list[str]:
    result = carrag(env, "documents", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return [document["source_id"] for document in json.loads(result.stdout)["items"]]


def run_sorting_scenario(env: dict[str, str | None], workdir: Path) -> None:
    (workdir / "docs" / "Zeta-notes.md").write_text("# Zeta\n\nZeta is the last letter.\n")
    (workdir / "docs" / "long.txt").write_text("\n\n".join(f"Paragraph {n}. " + "word " * 120 for n in range(12)))
    for source in ("docs/guide.md", "docs/sub/faq.md", "docs/Zeta-notes.md", "docs/long.txt"):
        assert carrag(env, "ingest", source).exit_code == 0  # one at a time: created_at follows this order

    newest_first = listed_sources(env)
    assert newest_first == ["long.txt", "Zeta-notes.md", "faq.md", "guide.md"]
    assert listed_sources(env, "--order", "asc") == newest_first[::-1]
    by_name = listed_sources(env, "--sort", "filename", "--order", "asc")
    assert by_name == ["faq.md", "guide.md", "long.txt", "Zeta-notes.md"], "case-insensitive"
    assert listed_sources(env, "--sort", "filename") == by_name[::-1], "desc by default"
    assert listed_sources(env, "--sort", "chunk_count")[0] == "long.txt"

    assert listed_sources(env, "--filename", "ZETA") == ["Zeta-notes.md"], "a substring, any case"
    assert listed_sources(env, "--filename", "*.MD", "--sort", "filename", "--order", "asc") == [
        "faq.md",
        "guide.md",
        "Zeta-notes.md",
    ], "a glob matches the whole file name"
    assert listed_sources(env, "--filename", "g*") == ["guide.md"], "not g anywhere: a glob is anchored"
    assert listed_sources(env, "--filename", "*.md", "--limit", "1", "--offset", "1", "--sort", "filename") == [
        "guide.md"
    ]

    plain = carrag(env, "documents", "list", "--filename", "faq", "--sort", "filename")
    assert plain.exit_code == 0, plain.output
    header, *rows = plain.stdout.splitlines()
    assert header.split("\t")[:3] == ["document_id", "collection", "source"] and len(rows) == 1
    assert rows[0].split("\t")[2] == "faq.md"
    none = carrag(env, "documents", "list", "--filename", "*.pdf")
    assert none.exit_code == 0 and none.stdout == "" and "No documents match." in none.stderr


def test_sorting_and_file_name_search_on_the_local_store(workdir: Path, local_env) -> None:
    run_sorting_scenario(local_env, workdir)


def test_sorting_and_file_name_search_against_a_server(workdir: Path, local_env, server) -> None:
    remote = local_env | {"CARRAG_URL": server.url, "CARRAG_API_KEY": API_KEY}
    try:
        run_sorting_scenario(remote, workdir)
    finally:
        assert carrag(remote, "reset", "--yes").exit_code == 0  # the server is shared by the module's tests


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sort", "size"], "'size' is not one of 'created_at', 'filename', 'chunk_count'"),
        (["--order", "up"], "'up' is not one of 'asc', 'desc'"),
        (["--filename", "  "], "give a file name, part of one, or a glob"),
        (["--filename", "x" * 501], "at most 500 characters"),
    ],
)
def test_bad_values_are_usage_errors_naming_the_option(local_env, args: list[str], message: str) -> None:
    result = carrag(local_env, "documents", "list", *args)
    assert result.exit_code == 2, result.output
    error = " ".join(result.output.replace("│", " ").split())
    assert args[0] in error and message in error, error

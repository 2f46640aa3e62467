"""The CLI's output layer through typer's CliRunner on the local store: tables that fit 80 columns
(forced with TTY_COMPATIBLE=1, as a terminal would be), tab-separated lines when stdout is not a
terminal (CliRunner's default), ``--json`` that parses into the API's shapes, and documents named
by id prefix, source id or file name, with an ambiguous name an error (exit 2) listing the candidates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from carrag.cli.main import app
from carrag.cli.output import Column, WordWrap, fitted_widths, keep_end, readable_paragraphs
from carrag.services.settings import Settings

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LONG_SOURCE = "projects/fleet-maintenance/handbooks/2024/trailers/hitching-and-coupling-procedures.md"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    project = tmp_path / "project"
    (project / "a").mkdir(parents=True)
    (project / "b").mkdir()
    (project / LONG_SOURCE).parent.mkdir(parents=True)
    (project / "a" / "manual.md").write_text("# Brakes\n\nBleed the brakes every two years with DOT 4 fluid.\n")
    (project / "b" / "manual.md").write_text("# Tyres\n\nRotate the tyres every 10,000 km.\n")
    (project / LONG_SOURCE).write_text("# Hitching\n\nAlways cross the safety chains under the trailer tongue.\n")
    monkeypatch.chdir(project)
    variables: dict[str, str | None] = {name.upper(): None for name in Settings.model_fields}
    variables.update(
        {
            "DATA_DIR": str(tmp_path / "data"),
            "LLM": "none",
            "CARRAG_URL": None,
            "CARRAG_API_KEY": None,
            "COLUMNS": "80",
            "TTY_COMPATIBLE": None,
            "NO_COLOR": "1",
        }
    )
    result = CliRunner().invoke(
        app, ["ingest", ".", "--tags", "fleet-maintenance,handbook,2024"], env=variables
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return variables


def carrag(env: dict[str, str | None], *args: str, terminal: bool = False, input: str | None = None):
    return CliRunner().invoke(app, list(args), env=env | ({"TTY_COMPATIBLE": "1"} if terminal else {}), input=input)


def listed(env: dict[str, str | None]) -> dict[str, dict]:
    result = carrag(env, "documents", "list", "--json")
    assert result.exit_code == 0, result.output
    return {doc["source_id"]: doc for doc in json.loads(result.stdout)["items"]}


def screen_lines(output: str) -> list[str]:
    return [line.rstrip() for line in ANSI.sub("", output).splitlines()]


def test_document_table_fits_80_columns_one_line_per_document(env) -> None:
    documents = listed(env)
    result = carrag(env, "documents", "list", terminal=True)
    assert result.exit_code == 0, result.output
    lines = screen_lines(result.stdout)
    assert all(len(line) <= 80 for line in lines), "\n".join(line for line in lines if len(line) > 80)
    rows = [line for line in lines if re.match(r"^[0-9a-f]{8} ", line)]
    assert len(rows) == 3, "one line per document: nothing wraps"
    for source, document in documents.items():
        row = next(line for line in rows if line.startswith(document["document_id"][:8]))
        assert document["document_id"] not in row, "tables show short ids"
        assert document["title"] in row, "the title tells the documents apart"
        if source == LONG_SOURCE:
            assert "…" in row and "coupling-procedures.md" in row and "projects/" not in row, "cut at its start"
        else:
            assert source in row
    header = next(line for line in lines if line.startswith("id "))
    assert re.search(r"id +source +chunks +created +title", header), "tags, collection and type need 100+ columns"
    wide = screen_lines(carrag(env | {"COLUMNS": "140"}, "documents", "list", terminal=True).stdout)
    header = next(line for line in wide if line.startswith("id "))
    assert re.search(r"id +collection +source +type +chunks +tags +created +title", header)


def test_search_and_show_fit_80_columns(env) -> None:
    search = carrag(env, "search", "safety chains trailer", "--explain", terminal=True)
    show = carrag(env, "documents", "show", "hitching-and-coupling-procedures.md", terminal=True)
    for result in (search, show):
        assert result.exit_code == 0, result.output
        lines = screen_lines(result.stdout)
        assert all(len(line) <= 80 for line in lines), "\n".join(line for line in lines if len(line) > 80)
    lines = screen_lines(search.stdout)
    first = next(index for index, line in enumerate(lines) if re.match(r"^1 +0\.\d{3} +…", line))
    assert re.search(r"chunk 0 · [0-9a-f]{8} · bm25 \d+ knn \d+ rrf 0\.\d{4}$", lines[first])
    assert lines[first + 1].strip() == "Hitching", "the title"
    assert lines[first + 2] == "    Always cross the safety chains under the trailer tongue.", "the passage, indented"
    assert re.search(rf"^source_id +{re.escape(LONG_SOURCE[:40])}", ANSI.sub("", show.stdout), re.M)


def test_plain_output_off_a_terminal_is_tab_separated_with_full_values(env) -> None:
    documents = listed(env)
    result = carrag(env, "documents", "list")
    assert result.exit_code == 0 and "\x1b[" not in result.stdout
    header, *rows = result.stdout.splitlines()
    assert header.split("\t") == ["document_id", "collection", "source", "type", "chunks", "tags", "created", "title"]
    by_source = {row.split("\t")[2]: row.split("\t") for row in rows}
    assert set(by_source) == set(documents), "full source ids, however long"
    long_row = by_source[LONG_SOURCE]
    assert long_row[:2] == [documents[LONG_SOURCE]["document_id"], "default"]
    assert long_row[6] == documents[LONG_SOURCE]["created_at"]
    assert set(long_row[5].split(",")) == set(documents[LONG_SOURCE]["tags"])

    health = carrag(env, "health")
    assert health.stdout.splitlines()[0].split("\t") == ["component", "status", "backend", "model", "detail"]
    assert {line.split("\t")[0] for line in health.stdout.splitlines()[1:]} == {"store", "embedder", "llm", "reranker"}


def test_json_everywhere_parses_into_the_api_shapes(env) -> None:
    documents = listed(env)
    manual = documents["a/manual.md"]
    assert set(manual) >= {"document_id", "source_id", "filename", "tags", "chunk_count", "created_at"}

    shown = json.loads(carrag(env, "documents", "show", manual["document_id"][:8], "--json").stdout)
    assert shown["document"]["document_id"] == manual["document_id"]
    assert shown["chunks"]["items"][0]["text"].startswith("# Brakes")

    found = json.loads(carrag(env, "search", "brake fluid", "--json").stdout)
    assert found["results"][0]["source_id"] == "a/manual.md" and "timings_ms" in found

    answered = carrag(env, "query", "How often should the brakes be bled?", "--json")
    assert answered.exit_code == 0, answered.output
    answer = json.loads(answered.stdout)
    assert isinstance(answer["answer"], str) and answer["answer"]
    assert "a/manual.md" in {source["source_id"] for source in answer["sources"]}
    assert {"answer_mode", "answerable", "model", "duration_ms", "timings_ms", "grounding"} <= set(answer)

    health = json.loads(carrag(env, "health", "--json").stdout)
    assert health["components"]["store"]["status"] == "ok" and health["status"] in ("ok", "degraded")


def test_documents_by_id_prefix_source_id_or_file_name(env) -> None:
    documents = listed(env)
    long_id = documents[LONG_SOURCE]["document_id"]
    by_name = carrag(env, "documents", "show", "hitching-and-coupling-procedures.md", "--json")
    assert json.loads(by_name.stdout)["document"]["document_id"] == long_id
    by_source = carrag(env, "documents", "show", "b/manual.md", "--json")
    assert json.loads(by_source.stdout)["document"]["source_id"] == "b/manual.md"

    missing = carrag(env, "documents", "show", "nothing.md")
    assert missing.exit_code == 1 and "No document matches 'nothing.md'" in missing.stderr

    declined = carrag(env, "documents", "delete", long_id[:8], input="n\n")
    assert declined.exit_code == 1 and f"Delete document {long_id} ({LONG_SOURCE})" in declined.stdout
    deleted = carrag(env, "documents", "delete", long_id[:8], "--yes")
    assert deleted.exit_code == 0 and f"Deleted {long_id} ({LONG_SOURCE})." in deleted.stdout
    assert LONG_SOURCE not in listed(env)


def test_an_ambiguous_name_lists_the_candidates_and_exits_2(env) -> None:
    documents = listed(env)
    for command in (("show",), ("delete", "--yes")):
        result = carrag(env, "documents", command[0], "manual.md", *command[1:])
        assert result.exit_code == 2, result.output
        assert "'manual.md' matches 2 documents" in result.stderr
        for source in ("a/manual.md", "b/manual.md"):
            document_id = documents[source]["document_id"]
            line = next(line for line in result.stderr.splitlines() if line.startswith(document_id))
            assert line.split("\t")[1:4] == ["default", "manual.md", source], "collection, filename and source"
    assert set(listed(env)) == set(documents), "nothing was deleted"


def test_the_same_source_in_two_collections_is_told_apart_with_collection(env) -> None:
    assert carrag(env, "collections", "create", "team-a").exit_code == 0
    assert carrag(env, "ingest", ".", "--collection", "team-a").exit_code == 0
    both = carrag(env, "documents", "show", "a/manual.md")
    assert both.exit_code == 2 and "'a/manual.md' matches 2 documents" in both.stderr
    assert {line.split("\t")[1] for line in both.stderr.splitlines()[2:]} == {"default", "team-a"}
    team = carrag(env, "documents", "show", "a/manual.md", "--collection", "team-a", "--json")
    assert team.exit_code == 0 and json.loads(team.stdout)["document"]["collection"] == "team-a"
    assert carrag(env, "documents", "delete", "a/manual.md", "-c", "team-a", "--yes").exit_code == 0
    assert carrag(env, "documents", "show", "a/manual.md", "--json").exit_code == 0, "the default one is left"

    plain = carrag(env, "collections", "list").stdout.splitlines()
    assert plain[0].split("\t") == ["collection_id", "name", "documents", "created"]
    assert [line.split("\t")[1:3] for line in plain[1:]] == [["default", "3"], ["team-a", "2"]]
    table = screen_lines(carrag(env, "collections", "list", terminal=True).stdout)
    assert any(re.match(r"^default +default +3 ", line) for line in table), table


def test_a_refused_key_names_the_option_and_the_variable(env) -> None:
    from carrag.cli.http_client import AUTH_HINT

    assert "--api-key" in AUTH_HINT and "CARRAG_API_KEY" in AUTH_HINT


def test_local_ingests_run_without_jobs(env) -> None:
    result = carrag(env, "jobs", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == {"items": [], "total": 0}
    plain = carrag(env, "jobs")
    assert plain.exit_code == 0 and plain.stdout == "" and "No jobs." in plain.stderr


def test_fitted_widths_shrink_flexible_columns_first_then_the_widest() -> None:
    columns = [Column("id"), Column("source", flexible=True), Column("tags", width=10), Column("n", justify="right")]
    cells = [["abcdefgh", "x" * 70, "a,b,c,d,e,f,g", "12"]]
    widths = fitted_widths(columns, [c.header for c in columns], cells, 80)
    assert widths == [8, 54, 10, 2] and sum(widths) + 2 * 3 == 80
    narrow = fitted_widths(columns, [c.header for c in columns], cells, 30)
    assert sum(narrow) + 2 * 3 <= 30 and narrow[0] >= 4 and narrow[3] == 2


def test_fitted_widths_count_terminal_cells_not_characters() -> None:
    columns = [Column("source"), Column("text", flexible=True)]
    widths = fitted_widths(columns, ["source", "text"], [["東京の手引き.md", "x"]], 80)
    assert widths[0] == 15, "each of the six CJK characters takes two cells"


def test_word_wrap_never_breaks_a_word_however_the_text_arrives() -> None:
    text = "The two general types of self-locking nuts are the all-metal type and the fiber lock type.\nThe end."
    for cut in range(1, len(text)):  # the stream split at every place
        written: list[str] = []
        wrap = WordWrap(written.append, 20)
        wrap.feed(text[:cut])
        wrap.feed(text[cut:])
        wrap.close()
        lines = "".join(written).split("\n")
        assert all(len(line) <= 20 for line in lines), lines
        assert " ".join(lines).split() == text.split(), "every word whole"
        assert lines[-1] == "The end.", "the text's own line break is kept"
    written = []
    wrap = WordWrap(written.append, 10)
    wrap.feed("a pneumonoultramicroscopic word")
    wrap.close()
    assert "".join(written) == "a\npneumonoultramicroscopic\nword", "a word longer than a line has a line of its own"
    streamed: list[str] = []
    wrap = WordWrap(streamed.append, 10)
    for piece in ("日本語の", "文章には空白が", "ありません"):
        wrap.feed(piece)
    assert "".join(streamed) == "日本語の文章には空白が", "text without spaces is not held back once no line holds it"
    unwrapped: list[str] = []
    WordWrap(unwrapped.append, None).feed("off a terminal, as it comes")
    assert unwrapped == ["off a terminal, as it comes"]


def test_readable_paragraphs_join_prose_lines_and_keep_rows_and_items() -> None:
    text = (
        "## Format Strings¶\n\nFormat strings describe the layout\nof the data.  SQLITE\\_MAX\\_LENGTH is big.\n\n"
        "| Character | Byte order |\n|---|---|\n| `@` | native |\n- one item\n  wrapped\n- two"
    )
    assert readable_paragraphs(text) == [
        "Format Strings",
        "Format strings describe the layout of the data.  SQLITE_MAX_LENGTH is big.",
        "Character │ Byte order",
        "`@` │ native",
        "- one item wrapped",
        "- two",
    ]


def test_keep_end_cuts_a_path_at_its_start_in_terminal_cells() -> None:
    assert keep_end("docs/guide/install.md", 30) == "docs/guide/install.md"
    assert keep_end("docs/guide/install.md", 12) == "…/install.md"
    assert keep_end("文書/説明書.md", 8) == "…明書.md", "wide characters count twice"

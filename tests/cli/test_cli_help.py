"""`carrag --help` ends by naming the store local commands use (issue 14, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_help_names_the_store_in_use(tmp_path: Path) -> None:
    env = {**os.environ, "DATA_DIR": str(tmp_path / "somewhere"), "COLUMNS": "250"}
    result = subprocess.run(
        [sys.executable, "-m", "carrag.cli.main", "--help"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert f"sqlite at {tmp_path / 'somewhere' / 'carrag.db'}" in result.stdout
    assert not (tmp_path / "somewhere").exists()  # --help creates nothing


def test_help_lists_the_commands_in_their_order() -> None:
    """The commands live in several modules (carrag/cli/*); main registers them in this order."""
    import typer.main

    from carrag.cli.main import app

    group = typer.main.get_command(app)
    with typer.Context(group) as context:
        names = group.list_commands(context)  # type: ignore[attr-defined]
    assert names == [
        "serve", "ingest", "sync", "query", "search", "health", "jobs", "reset", "eval", "eval-answers", "bench", "reindex",
        "mcp", "documents", "collections",
    ]  # fmt: skip


def test_help_shows_default_values_not_setting_names() -> None:
    from typer.testing import CliRunner

    from carrag.cli.main import app

    for command in ("query", "search"):
        result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        assert "default: 5, or DEFAULT_TOP_K if set" in text and "default: DEFAULT_TOP_K" not in text
        assert "default: rerank when the reranker model is installed" in text
    query_help = " ".join(CliRunner().invoke(app, ["query", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "default: extract with the local LLM" in query_help and "default: ANSWER_MODE" not in query_help

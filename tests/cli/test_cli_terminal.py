"""The CLI as a person sees it in an 80-column terminal: each command runs in a real tmux pane 80
columns wide (its own tmux server), and the screen is read back with ``tmux capture-pane``. Documents
ingested from a deep folder whose files differ only at the end of their paths:

- `documents list`: one row per document, every row different, the part of the source that tells
  files apart (their names) on screen, and the titles;
- `search`: each result's passage is a few readable lines, wrapped at word boundaries;
- `query`: the answer is word-wrapped by the CLI, never broken inside a word by the terminal.

Without /usr/bin/tmux the tests skip (`make test` installs it as root, with chromium)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from carrag.bench.server import clean_environment

WIDTH = 80
TMUX = shutil.which("tmux")
BASE = "home/someone/documents/handbooks/installation-and-upgrade-guides"
GUIDES = {
    "linux-distribution-packages.md": (
        "Installing from distribution packages",
        "Installing from the distribution packages is the recommended way on Linux, because the package "
        "manager keeps the service, its configuration directory and its systemd unit up to date together.",
    ),
    "linux-build-from-source.md": (
        "Building from source on Linux",
        "Building from source needs a C compiler, the development headers of the system libraries and about "
        "two gigabytes of free disk space for the intermediate object files of a complete build.",
    ),
    "windows-installer.md": (
        "The Windows installer",
        "The Windows installer registers the service with the service control manager and asks before it "
        "opens the firewall port that remote clients use to reach the administration console.",
    ),
}

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is missing (Debian: apt-get install tmux)")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The guides ingested into a local store by their absolute glob; the environment to run carrag in."""
    root = tmp_path_factory.mktemp("terminal")
    folder = root / BASE
    folder.mkdir(parents=True)
    for name, (title, text) in GUIDES.items():
        (folder / name).write_text(f"# {title}\n\n{text}\n")
    env = {
        key: value for key, value in clean_environment().items() if key not in ("COLUMNS", "LINES", "TTY_COMPATIBLE")
    }
    env |= {"DATA_DIR": str(root / "data"), "LLM": "none", "TAGGER": "off", "NO_COLOR": "1"}
    ingested = carrag(env, root, "ingest", f"{folder}/*.md")
    assert "3 sources: 3 ingested" in ingested, ingested
    yield env | {"ROOT": str(root)}


def carrag(env: dict[str, str], cwd: Path, *args: str) -> str:
    """A command's output off a terminal (setup and reference values)."""
    done = subprocess.run(
        [sys.executable, "-m", "carrag.cli.main", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    return done.stdout + done.stderr


def on_screen(env: dict[str, str], *args: str) -> list[str]:
    """The lines a command leaves in a tmux pane WIDTH columns wide."""
    socket = f"carrag-test-{uuid.uuid4().hex[:8]}"
    variables = " ".join(shlex.quote(f"{key}={value}") for key, value in env.items() if key != "ROOT")
    command = f"env -i {variables} {shlex.quote(sys.executable)} -m carrag.cli.main {shlex.join(args)}"
    tmux = [TMUX or "tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-x",
            str(WIDTH),
            "-y",
            "200",
            "-c",
            env["ROOT"],
            f"{command}; echo __END__; sleep 300",
        ],
        check=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    try:
        for _ in range(600):
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True)
            lines = screen.stdout.splitlines()
            if "__END__" in lines:
                return [line.rstrip() for line in lines[: lines.index("__END__")]]
            time.sleep(0.1)
        raise AssertionError("the command did not finish:\n" + screen.stdout)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_every_document_row_is_told_apart_at_80_columns(project) -> None:
    lines = on_screen(project, "documents", "list")
    rows = [line for line in lines if re.match(r"^[0-9a-f]{8}  ", line)]
    assert len(rows) == len(GUIDES), "\n".join(lines)  # one line each: nothing wrapped
    assert len(set(rows)) == len(rows)
    for name, (title, _) in GUIDES.items():
        row = next(row for row in rows if name[-15:] in row)  # the end of its name, however the source is cut
        assert title[:12] in row, row
    assert all(len(line) <= WIDTH for line in lines)


def test_search_passages_are_a_few_whole_lines(project) -> None:
    lines = on_screen(project, "search", "which compiler and disk space does a build from source need")
    heads = [index for index, line in enumerate(lines) if re.match(r"^\d +\d\.\d{3}  ", line)]
    assert len(heads) == len(GUIDES), "\n".join(lines)
    words = {word for _, text in GUIDES.values() for word in text.split()} | {"…"}
    for start, end in zip(heads, [*heads[1:], len(lines)], strict=True):
        passage = [line for line in lines[start + 2 : end] if line.startswith("    ")]
        assert 2 <= len(passage) <= 4, "\n".join(lines[start:end])
        on_lines = {word for line in passage[1:] for word in line.split()}
        assert on_lines <= words, f"words cut across lines: {on_lines - words}"
    assert "linux-build-from-source.md" in lines[heads[0]], "the best passage first, its source's end shown"


def test_query_answers_are_word_wrapped(project) -> None:
    question = "What does building from source need?"
    answer = json.loads(carrag(project, Path(project["ROOT"]), "query", question, "--json"))["answer"]
    assert len(answer) > 2 * WIDTH, answer
    lines = on_screen(project, "query", question)
    text = lines[: next(index for index, line in enumerate(lines) if line.startswith("(answer:"))]
    assert len(text) >= 3 and all(len(line) <= WIDTH for line in text), "\n".join(lines)
    assert " ".join(text).split() == answer.split(), "every word whole: the CLI wrapped it, not the terminal"

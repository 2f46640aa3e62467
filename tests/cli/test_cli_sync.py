"""`carrag sync` (carrag/cli/sync_command.py): a folder on the local store, a folder a server syncs
(``--url``, under its SYNC_ROOTS), a site crawled, and ``--watch`` following a folder until Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from carrag.bench.server import server_process
from carrag.services.settings import Settings
from tests.cli.test_cli import carrag
from tests.services.sync.helpers import TOPICS, note, write
from tests.services.sync.site import Site, html


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "shared" / "handbook"
    for number, topic in enumerate(TOPICS[:3]):
        write(root, f"part-{number}.md", note(topic))
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    values: dict[str, str | None] = {name.upper(): None for name in Settings.model_fields}
    values.update(
        DATA_DIR=str(tmp_path / "data"),
        LLM="none",
        PER_HOST_DELAY="0",
        FETCH_ALLOWED_HOSTS="127.0.0.1",
        COLUMNS="200",
        CARRAG_URL=None,
        CARRAG_API_KEY=None,
    )
    return values


def test_a_folder_synced_on_the_local_store(env, folder: Path) -> None:
    first = carrag(env, "sync", str(folder))
    assert first.exit_code == 0, first.output
    assert "+ added    part-0.md" in first.output
    assert f"{folder}: 3 added, 0 updated, 0 unchanged, 0 deleted, 0 skipped, 0 failed" in first.output

    write(folder, "part-1.md", note(TOPICS[1], version=2))
    (folder / "part-2.md").unlink()
    write(folder, "broken.json", "{not json")
    second = carrag(env, "sync", str(folder), "--json")
    assert second.exit_code == 1, "a source failed"
    job = json.loads(second.stdout)
    assert job["kind"] == "sync" and job["state"] == "done"
    assert {k: v for k, v in job["report"]["counts"].items() if v} == {
        "updated": 1,
        "deleted": 1,
        "unchanged": 1,
        "failed": 1,
    }
    assert "✗ failed   broken.json" in second.stderr

    only_markdown = carrag(env, "sync", str(folder), "--glob", "*.md")
    assert only_markdown.exit_code == 0, only_markdown.output
    assert "0 added, 0 updated, 2 unchanged, 0 deleted, 0 skipped, 0 failed" in only_markdown.output


def test_a_site_crawled_from_the_command_line(env) -> None:
    with Site() as site:
        site.pages["/guide/index.html"] = html("Guide", "Start here for the fleet guide.", "oil.html")
        site.pages["/guide/oil.html"] = html("Oil", "Change the engine oil every 15,000 km.")
        result = carrag(env, "sync", site.url("/guide/index.html"), "--max-depth", "1")
        assert result.exit_code == 0, result.output
        assert f"{site.url('/guide/')}: 2 added" in result.output
        refused = carrag(env, "sync", site.url("/guide/index.html"), "--watch")
        assert refused.exit_code == 2 and "--watch and --glob are for folders" in refused.output


def test_the_server_syncs_folders_under_its_sync_roots(tmp_path: Path, env, folder: Path) -> None:
    with server_process(tmp_path / "server", LLM="none", SYNC_ROOTS=str(folder.parent)) as server:
        remote = env | {"CARRAG_URL": server.url}
        result = carrag(remote, "sync", str(folder))
        assert result.exit_code == 0, result.output
        assert f"{folder}: 3 added" in result.output
        outside = carrag(remote, "sync", str(tmp_path / "server"))
        assert outside.exit_code == 1 and "SYNC_ROOTS" in outside.stderr


@pytest.mark.slow
def test_watch_follows_the_folder_until_interrupted(env, folder: Path) -> None:
    # Ctrl-C reaches the command as it does at a terminal, also when the tests themselves run as a shell's
    # background job (which starts them with SIGINT ignored, a disposition their children would inherit).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "carrag.cli.main", "sync", str(folder), "--watch", "--debounce", "0.5"],
            env={
                key: value for key, value in {**os.environ, **env, "PYTHONUNBUFFERED": "1"}.items() if value is not None
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        output = Lines(process)
        lines = output.until("Watching")
        assert any("3 added" in line for line in lines)
        write(folder, "part-9.md", note(TOPICS[6]))
        lines = output.until("failed")
        assert any("+ added    part-9.md" in line for line in lines)
        assert "1 added, 0 updated, 3 unchanged" in lines[-1]
        process.send_signal(signal.SIGINT)
        assert output.until("Stopped watching.", timeout=60)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class Lines:
    """A process's output lines, read by a thread, so a test can wait for one with a timeout."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.process = process
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)

    def until(self, marker: str, timeout: float = 120) -> list[str]:
        lines: list[str] = []
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self.queue.get(timeout=remaining)
            except queue.Empty:
                break
            assert line is not None, f"the command ended: {lines}"
            lines.append(line)
            if marker in line:
                return lines
        raise AssertionError(f"no {marker!r} within {timeout}s: {lines}")

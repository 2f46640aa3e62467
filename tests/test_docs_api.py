"""docs/api.md and the README's examples stay true: every example runs against a real server.

docs/api.md's format: each route has a ``### METHOD /path`` heading (the path as in OpenAPI); each
example is a ```bash block with one curl command, an ``# expect <status>[|<status>...]`` line and
optionally ``# saves <field>`` lines (that field of the JSON answer replaces ``<field>`` in the
examples after it). A ```json block after an example shows its answer: its field names must be the
answer's (all of them, unless the object has a ``"...": "..."`` entry saying it is cut short). The examples run in the order written, with curl, from the repository root.
Substitutions: ``http://127.0.0.1:8000`` → the test server, ``https://example.com/`` → a page
served on loopback (no internet here; FETCH_ALLOWED_HOSTS lets the server fetch from it),
``/srv/handbook`` → a small folder under the server's SYNC_ROOTS. The server
has the API keys of docs/api.md's "Scoped API keys" section; an example that sends no
``Authorization`` header is sent with the full-access key (as the page's conventions say to).

The README's examples (curl and ``.venv/bin/carrag ... --url``) run in order, and each
``# answers: <text>`` line under one says what its answer holds (whitespace aside).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from carrag.api.main import create_app
from carrag.bench.server import ServerProcess, clean_environment, server_process
from tests.conftest import make_settings
from tests.live_server import served_page

REPO = Path(__file__).resolve().parent.parent
API_DOC = REPO / "docs" / "api.md"
README = REPO / "README.md"
DOCUMENTED_BASE = "http://127.0.0.1:8000"
EXAMPLE_SITE = "https://example.com/"
EXAMPLE_FOLDER = "/srv/handbook"
HEADING = re.compile(r"^### ([A-Z]+) (/\S*)\s*$")
PLACEHOLDER = re.compile(r"<([a-z_]+)>")
OUTSIDE_SCHEMA = {"GET /", "POST /mcp"}
PAGE = (
    b"<html><head><title>Hitch guide</title></head><body><article><h1>Hitch guide</h1><p>Cross the "
    b"safety chains under the trailer tongue and match the hitch ball to the coupler.</p></article></body></html>"
)

# The keys docs/api.md's "Scoped API keys" section uses, configured as that section shows.
FULL_ACCESS_KEY = "admin-key"
DOCUMENTED_KEYS = {
    "API_KEYS": f"{FULL_ACCESS_KEY},team-a-key,team-a-reader,reader-key",
    "API_KEY_SCOPES": json.dumps(
        {
            "team-a-key": {"collections": ["team-a"]},
            "team-a-reader": {"collections": ["team-a"], "read_only": True},
            "reader-key": {"read_only": True},
        }
    ),
}

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


@dataclass
class Example:
    route: str  # "POST /ingest/file"
    command: str
    expect: set[int] = field(default_factory=set)
    saves: list[str] = field(default_factory=list)


def bash_blocks(text: str) -> Iterator[tuple[str | None, str]]:
    """(the route heading above it, the block's text) for every ```bash block."""
    route: str | None = None
    lines = iter(text.splitlines())
    for line in lines:
        if match := HEADING.match(line):
            route = f"{match[1]} {match[2]}"
        elif line.strip() == "```bash":
            block = []
            for inner in lines:
                if inner.strip() == "```":
                    break
                block.append(inner)
            yield route, "\n".join(block)


def api_examples() -> list[Example]:
    examples = []
    for route, block in bash_blocks(API_DOC.read_text()):
        assert route, f"an example before any route heading:\n{block}"
        example = Example(route, "")
        commands = []
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("# expect "):
                example.expect = {int(code) for code in line.removeprefix("# expect ").split("|")}
            elif line.startswith("# saves "):
                example.saves.append(line.removeprefix("# saves ").strip())
            elif line.strip():
                commands.append(line.strip())
        assert len(commands) == 1 and commands[0].startswith("curl "), f"{route}: one curl command per block"
        assert example.expect, f"{route}: no '# expect <status>' line in\n{block}"
        example.command = commands[0]
        examples.append(example)
    return examples


def shown_answers() -> list[object | None]:
    """For each example, in order, the JSON the page shows after it (before the next example), when
    that block is JSON as written (blocks with `{...}` shorthand are left out: None)."""
    shown: list[object | None] = []
    lines = iter(API_DOC.read_text().splitlines())
    for line in lines:
        fence = line.strip()
        if not fence.startswith("```") or fence == "```":
            continue
        block = []
        for inner in lines:
            if inner.strip() == "```":
                break
            block.append(inner)
        if fence == "```bash":
            shown.append(None)
        elif fence == "```json" and shown and shown[-1] is None:
            try:
                shown[-1] = json.loads("\n".join(block))
            except ValueError:
                pass
    return shown


def field_differences(shown: object, answer: object, path: str = "") -> list[str]:
    """Field names the page shows that the answer lacks, and, where the shown object has no
    ``"...": "..."`` entry saying it is cut short, fields the answer has that the page leaves out."""
    if isinstance(shown, list) and isinstance(answer, list) and shown and answer:
        return field_differences(shown[0], answer[0], f"{path}[0]")
    if not isinstance(shown, dict) or not isinstance(answer, dict):
        return []
    differences = [f"{path}.{key}: shown, not in the answer" for key in shown if key != "..." and key not in answer]
    if "..." not in shown:
        differences += [f"{path}.{key}: in the answer, not shown" for key in answer if key not in shown]
    for key in shown.keys() & answer.keys():
        differences += field_differences(shown[key], answer[key], f"{path}.{key}")
    return differences


def readme_examples() -> list[tuple[str, list[str]]]:
    """(command, the texts its ``# answers:`` lines say it answers), for every curl and carrag command."""
    examples: list[tuple[str, list[str]]] = []
    for _, block in bash_blocks(README.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith(("curl ", ".venv/bin/carrag ")):
                examples.append((line.strip(), []))
            elif line.startswith("# answers: "):
                examples[-1][1].append(line.removeprefix("# answers: "))
    return examples


def run_carrag(command: str, server_url: str) -> tuple[int, str]:
    arguments = shlex.split(command.replace(DOCUMENTED_BASE, server_url))
    arguments[:1] = [sys.executable, "-m", "carrag.cli.main"]
    env = clean_environment() | {"CARRAG_API_KEY": FULL_ACCESS_KEY, "COLUMNS": "200"}
    finished = subprocess.run(arguments, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return finished.returncode, finished.stdout + finished.stderr


def run_curl(
    command: str, server: ServerProcess, site_url: str, saved: dict[str, str], body_file: Path
) -> tuple[int, str]:
    command = command.replace(DOCUMENTED_BASE, server.url).replace(EXAMPLE_SITE, site_url)
    command = command.replace(EXAMPLE_FOLDER, str(server.data_dir / "sync" / "handbook"))
    missing = [name for name in PLACEHOLDER.findall(command) if name not in saved]
    assert not missing, f"no earlier example saved {missing} for: {command}"
    command = PLACEHOLDER.sub(lambda match: saved[match[1]], command)
    arguments = shlex.split(command)
    if not any(argument.lower().startswith("authorization:") for argument in arguments):
        arguments[1:1] = ["-H", f"Authorization: Bearer {FULL_ACCESS_KEY}"]
    arguments[1:1] = ["-sS", "--max-time", "120", "-o", str(body_file), "-w", "%{http_code}"]
    finished = subprocess.run(arguments, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert finished.returncode == 0, f"curl failed ({finished.returncode}): {finished.stderr}\n{command}"
    return int(finished.stdout), body_file.read_text(errors="replace")


@pytest.fixture(scope="module")
def example_site() -> Iterator[str]:
    with served_page(PAGE) as url:
        yield f"{url}/"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    data_dir = tmp_path_factory.mktemp("docs-server")
    handbook = data_dir / "sync" / "handbook"
    handbook.mkdir(parents=True)
    (handbook / "brakes.md").write_text("# Brakes\n\nThe brake fluid of the fleet vans is replaced every two years.\n")
    with server_process(
        data_dir,
        LLM="none",
        FETCH_ALLOWED_HOSTS="127.0.0.1",
        SYNC_ROOTS=str(data_dir / "sync"),
        **DOCUMENTED_KEYS,
    ) as running:
        yield running


def test_every_route_has_a_heading_and_every_heading_a_route(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path))
    in_schema = {
        f"{method.upper()} {path}" for path, operations in app.openapi()["paths"].items() for method in operations
    }
    examples = api_examples()
    documented = {example.route for example in examples}
    assert in_schema - documented == set(), "routes without a heading and an example in docs/api.md"
    # Routes outside the OpenAPI schema (the UI page, the MCP transport); their examples prove they answer.
    assert documented - in_schema == OUTSIDE_SCHEMA, "docs/api.md documents routes the app does not have"
    headings = {f"{m[1]} {m[2]}" for line in API_DOC.read_text().splitlines() if (m := HEADING.match(line))}
    assert headings == documented, f"headings without an example: {headings - documented}"


def test_every_api_example_answers_as_documented(server, example_site: str, tmp_path: Path) -> None:
    saved: dict[str, str] = {}
    examples = api_examples()
    shown = shown_answers()
    assert len(examples) >= 25 and len(shown) == len(examples)
    wrong_fields = []
    for number, example in enumerate(examples):
        status, body = run_curl(example.command, server, example_site, saved, tmp_path / f"{number}.out")
        assert status in example.expect, (
            f"{example.route}: {status} (expected {example.expect}) for\n{example.command}\n{body[:500]}"
        )
        if body.startswith(("{", "[")) and status < 500:
            answer = json.loads(body)  # JSON answers are JSON, errors included
            wrong_fields += [f"{example.route} {difference}" for difference in field_differences(shown[number], answer)]
        for name in example.saves:
            saved[name] = str(json.loads(body)[name])
    assert wrong_fields == [], "the JSON shown after these examples has other fields than the answers"


@pytest.mark.slow  # it ingests docs/*.md, as the README's first example does
def test_readme_examples_work_and_answer_what_they_say(server, example_site: str, tmp_path: Path) -> None:
    examples = readme_examples()
    assert len(examples) >= 8 and sum(bool(answers) for _, answers in examples) >= 4
    saved: dict[str, str] = {}
    for number, (command, answers) in enumerate(examples):
        if command.startswith("curl "):
            status, body = run_curl(command, server, example_site, saved, tmp_path / f"{number}.out")
            assert 200 <= status < 300, f"README example answered {status}:\n{command}\n{body[:500]}"
            if body.startswith("{") and "document_id" in (answer := json.loads(body)):
                saved.setdefault("document_id", answer["document_id"])
        else:
            exit_code, body = run_carrag(command, server.url)
            assert exit_code == 0, f"README example exited {exit_code}:\n{command}\n{body[-2000:]}"
        flat = " ".join(body.replace("\\n", " ").split())  # JSON and SSE bodies escape their line breaks
        for expected in answers:
            assert expected in flat, f"README example does not answer {expected!r}:\n{command}\n{body[:2000]}"

"""`carrag documents download` (issue 14, item 4): the original comes back byte for byte, in local mode
and from a server, under its own name (never overwriting) or where -o says."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import test_cli as cli
from tests.cli.test_cli import FIXTURES, carrag

# test_cli's fixtures: a working directory with documents, local-mode settings, a server with a key
workdir = cli.workdir
local_env = cli.local_env
server = cli.server
web_page = cli.web_page

MANUAL = (FIXTURES / "2019_Ford_F150_Owners_Manual.pdf").read_bytes()


def document_id(env, source_id: str, *url_args: str) -> str:
    listing = carrag(env, "documents", "list", "--json", *url_args)
    assert listing.exit_code == 0, listing.output
    return next(doc["document_id"] for doc in json.loads(listing.stdout)["items"] if doc["source_id"] == source_id)


def test_local_download_by_name_and_to_a_chosen_file(workdir: Path, local_env) -> None:
    assert carrag(local_env, "ingest", "manual.pdf", "docs/guide.md").exit_code == 0
    manual = document_id(local_env, "manual.pdf")
    (workdir / "out").mkdir()
    first = carrag(local_env, "documents", "download", manual, "-o", "out/copy.pdf")
    assert first.exit_code == 0, first.output
    assert (workdir / "out" / "copy.pdf").read_bytes() == MANUAL

    guide = document_id(local_env, "guide.md")
    saved = carrag(local_env, "documents", "download", guide)
    assert saved.exit_code == 0, saved.output
    assert (workdir / "guide.md").read_text() == (workdir / "docs" / "guide.md").read_text()
    again = carrag(local_env, "documents", "download", guide)  # the default name never overwrites
    assert again.exit_code == 1 and "guide.md exists" in again.output

    to_stdout = carrag(local_env, "documents", "download", guide, "-o", "-")
    assert to_stdout.exit_code == 0 and "snapshot retention period" in to_stdout.stdout

    missing = carrag(local_env, "documents", "download", "no-such-id", "-o", "out/none")
    assert missing.exit_code == 1 and "No document matches 'no-such-id'" in missing.output
    assert not (workdir / "out" / "none").exists()


def test_download_from_a_server(workdir: Path, local_env, server) -> None:
    remote = local_env | {"CARRAG_URL": server.url, "CARRAG_API_KEY": cli.API_KEY}
    assert carrag(remote, "ingest", "manual.pdf").exit_code == 0
    manual = document_id(remote, "manual.pdf")
    refused = carrag(remote, "documents", "download", manual)  # manual.pdf is here already
    assert refused.exit_code == 1 and "manual.pdf exists" in refused.output
    result = carrag(remote, "documents", "download", manual[:8], "-o", "fetched.pdf")  # an id prefix
    assert result.exit_code == 0, result.output
    assert (workdir / "fetched.pdf").read_bytes() == MANUAL
    assert "Saved manual.pdf (2,591 bytes)" in result.output.replace("\n", " ")
    missing = carrag(remote, "documents", "download", "no-such-id", "-o", "gone.pdf")
    assert missing.exit_code == 1 and "No document matches 'no-such-id'" in missing.output
    assert not (workdir / "gone.pdf").exists()

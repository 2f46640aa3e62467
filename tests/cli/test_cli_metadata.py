# ruff: noqa: F811 - the CLI suite's fixtures are imported by name and used as parameters
"""`carrag ingest --meta`, the search and query filters, DEFAULT_TOP_K and `documents delete --source`,
in local mode and against a running server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from carrag.bench.server import server_process
from tests.cli.test_cli import carrag, local_env, stored, workdir  # noqa: F401 - fixtures used by name

API_KEY = "cli-meta-key"


def found(env: dict[str, str | None], *args: str) -> list[str]:
    result = carrag(env, "search", "snapshot retention password reset", "--json", *args)
    assert result.exit_code == 0, result.output
    return sorted({hit["source_id"] for hit in json.loads(result.stdout)["results"]})


def check_metadata_filters_and_delete(env: dict[str, str | None]) -> None:
    ingested = carrag(env, "ingest", "docs/guide.md", "--meta", "team=a", "--meta", "year=2024", "--tags", "team-a")
    assert ingested.exit_code == 0, ingested.output
    assert carrag(env, "ingest", "docs/sub/faq.md", "--meta", "team=b", "--tags", "team-b").exit_code == 0
    documents = stored(env)
    assert documents["guide.md"]["metadata"] == {"team": "a", "year": "2024"}
    assert "chunking" in documents["guide.md"]["system_metadata"]

    assert found(env) == ["faq.md", "guide.md"]
    assert found(env, "--meta", "team=b") == ["faq.md"]
    assert found(env, "--meta", "team=a", "--meta", "year=2024") == ["guide.md"]
    assert found(env, "--tag-prefix", "team-", "--filename", "g*.md") == ["guide.md"]
    assert found(env, "--source-type", "pdf") == []
    assert found(env, "--created-after", "2000-01-01", "--created-before", "2999-01-01T00:00:00Z") == [
        "faq.md",
        "guide.md",
    ]
    bad_date = carrag(env, "search", "snapshot", "--created-after", "soon")
    assert bad_date.exit_code == 2 and "created_after must be an ISO 8601" in bad_date.output
    bad_meta = carrag(env, "search", "snapshot", "--meta", "team")
    assert bad_meta.exit_code == 2 and "must be key=value" in bad_meta.output
    answer = carrag(env, "query", "How long is the snapshot retention period?", "--meta", "team=b")
    assert answer.exit_code == 0, answer.output
    assert "guide.md" not in answer.stdout

    refused = carrag(env, "documents", "delete", "--source", "guide.md", input="n\n")
    assert refused.exit_code == 1 and "guide.md" in stored(env)
    deleted = carrag(env, "documents", "delete", "--source", "guide.md", "--yes")
    assert deleted.exit_code == 0, deleted.output
    assert f"Deleted {documents['guide.md']['document_id']} (guide.md)." in deleted.stdout
    assert set(stored(env)) == {"faq.md"}
    missing = carrag(env, "documents", "delete", "--source", "guide.md", "--yes")
    assert missing.exit_code == 1 and "No document with source id 'guide.md'" in missing.stderr
    both = carrag(env, "documents", "delete", "some-id", "--source", "faq.md", "--yes")
    assert both.exit_code == 2

    assert carrag(env, "collections", "create", "team").exit_code == 0
    assert carrag(env, "ingest", "docs/sub/faq.md", "--collection", "team").exit_code == 0
    scoped = carrag(env, "documents", "delete", "--source", "faq.md", "--collection", "team", "--yes")
    assert scoped.exit_code == 0, scoped.output
    assert stored(env)["faq.md"]["document_id"] == documents["faq.md"]["document_id"]


def test_local_mode(workdir: Path, local_env) -> None:
    check_metadata_filters_and_delete(local_env)


def test_default_top_k_is_honoured(workdir: Path, local_env) -> None:
    (workdir / "docs" / "more.md").write_text("# More\n\nSnapshots are kept for thirty days, then removed.\n")
    assert carrag(local_env, "ingest", "docs/**/*.md").exit_code == 0
    one = local_env | {"DEFAULT_TOP_K": "1"}
    result = carrag(one, "search", "snapshot retention days", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["results"]) == 1
    explicit = carrag(one, "search", "snapshot retention days", "--json", "--top-k", "3")
    assert len(json.loads(explicit.stdout)["results"]) == 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with server_process(tmp_path_factory.mktemp("cli-meta-server"), LLM="none", API_KEYS=API_KEY) as running:
        yield running


def test_remote_mode(workdir: Path, local_env, server) -> None:
    check_metadata_filters_and_delete(local_env | {"CARRAG_URL": server.url, "CARRAG_API_KEY": API_KEY})

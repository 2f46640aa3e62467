"""`--collection` on ingest, search, query and documents list, and `carrag collections ...`, on the
local store and against a running server."""

# ruff: noqa: F811  (fixtures of the CLI suite, imported, are parameters here)
from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import API_KEY, carrag, local_env, server, stored, workdir  # noqa: F401


def names(env: dict[str, str | None]) -> dict[str, int]:
    result = carrag(env, "collections", "list", "--json")
    assert result.exit_code == 0, result.output
    return {c["name"]: c["document_count"] for c in json.loads(result.stdout)["items"]}


def run_collection_scenario(env: dict[str, str | None]) -> None:
    created = carrag(env, "collections", "create", "handbooks")
    assert created.exit_code == 0 and "created collection handbooks" in created.output, created.output
    clash = carrag(env, "collections", "create", "handbooks")
    assert clash.exit_code == 1 and "already exists" in clash.output

    into = carrag(env, "ingest", "docs/guide.md", "--collection", "handbooks")
    assert into.exit_code == 0 and "1 ingested" in into.output, into.output
    assert carrag(env, "ingest", "docs/guide.md").exit_code == 0, "the same file in default is another document"
    assert carrag(env, "ingest", "docs/sub/faq.md").exit_code == 0
    unknown = carrag(env, "ingest", "docs/sub/faq.md", "--collection", "nope")
    assert unknown.exit_code == 1 and "collection 'nope' does not exist" in unknown.output
    assert names(env) == {"default": 2, "handbooks": 1}

    in_handbooks = stored(env, "--collection", "handbooks")
    assert list(in_handbooks) == ["guide.md"] and in_handbooks["guide.md"]["collection"] == "handbooks"

    found = carrag(env, "search", "snapshot retention", "--collection", "handbooks", "--json")
    assert found.exit_code == 0, found.output
    assert {hit["collection"] for hit in json.loads(found.stdout)["results"]} == {"handbooks"}
    # identical passages of the two copies of guide.md count once; faq.md is only in default
    both = carrag(env, "search", "snapshot retention password", "-c", "handbooks", "-c", "default", "--json")
    hits = json.loads(both.stdout)["results"]
    assert {hit["source_id"] for hit in hits} == {"guide.md", "faq.md"}
    assert {hit["collection"] for hit in hits} <= {"handbooks", "default"}
    answer = carrag(env, "query", "How long is the snapshot retention period?", "--collection", "handbooks")
    assert answer.exit_code == 0 and "guide.md" in answer.stdout, answer.output
    assert carrag(env, "search", "snapshot", "--collection", "nope").exit_code == 1

    renamed = carrag(env, "collections", "rename", "handbooks", "manuals")
    assert renamed.exit_code == 0 and "to manuals" in renamed.output, renamed.output
    deleted = carrag(env, "collections", "delete", "manuals", "--yes")
    assert deleted.exit_code == 0 and "(1 documents)" in deleted.output, deleted.output
    assert names(env) == {"default": 2}
    refused = carrag(env, "collections", "delete", "default", "--yes")
    assert refused.exit_code == 1 and "cannot be deleted" in refused.output


def test_collections_on_the_local_store(workdir: Path, local_env) -> None:
    run_collection_scenario(local_env)


def test_collections_against_a_server(workdir: Path, local_env, server) -> None:
    run_collection_scenario(local_env | {"CARRAG_URL": server.url, "CARRAG_API_KEY": API_KEY})

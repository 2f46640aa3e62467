"""The ``carrag`` CLI, through typer's CliRunner: on the local store directly (DATA_DIR in tmp_path)
and against a real server on loopback (``--url``), with real files, globs and a loopback web page."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from carrag.bench.server import server_process
from carrag.cli.main import app
from carrag.services.container import build_container
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from tests.conftest import FIXTURES
from tests.live_server import served_page

API_KEY = "cli-test-key"
PAGE = (
    b"<html><head><title>Trailer hitch guide</title></head><body><article><h1>Trailer hitch guide</h1>"
    b"<p>Always cross the safety chains under the trailer tongue. The hitch ball must match the coupler size, "
    b"usually two inches for small trailers.</p><p>Check the tyre pressure of the trailer before every trip.</p>"
    b"</article></body></html>"
)


@pytest.fixture(scope="module")
def web_page() -> Iterator[str]:
    """A web page on loopback, for URL sources."""
    with served_page(PAGE) as url:
        yield f"{url}/hitch.html"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a small document tree; globs are relative to it."""
    project = tmp_path / "project"
    (project / "docs" / "sub").mkdir(parents=True)
    (project / "docs" / "guide.md").write_text("# Guide\n\nThe snapshot retention period is thirty days.\n")
    (project / "docs" / "sub" / "faq.md").write_text("# FAQ\n\nTo reset a password, open Settings and choose Reset.\n")
    (project / "docs" / "logo.gif").write_bytes(b"GIF89a not parsed")  # an unsupported type
    shutil.copy(FIXTURES / "2019_Ford_F150_Owners_Manual.pdf", project / "manual.pdf")
    monkeypatch.chdir(project)
    return project


@pytest.fixture
def local_env(tmp_path: Path) -> dict[str, str | None]:
    """Settings for local mode; every other Carrag setting is removed from the environment."""
    env: dict[str, str | None] = {name.upper(): None for name in Settings.model_fields}
    env.update(
        {
            "DATA_DIR": str(tmp_path / "data"),
            "LLM": "none",
            "PER_HOST_DELAY": "0",
            "WHOLE_DOCUMENT_CHARS": "0",
            "FETCH_ALLOWED_HOSTS": "127.0.0.1",
            "COLUMNS": "200",
            "CARRAG_URL": None,
            "CARRAG_API_KEY": None,
        }
    )
    return env


def carrag(env: dict[str, str | None], *args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), env=env, input=input)


def stored(env: dict[str, str | None], *url_args: str) -> dict[str, dict]:
    """source_id → document, read back through ``documents list --json``."""
    result = carrag(env, "documents", "list", "--json", *url_args)
    assert result.exit_code == 0, result.output
    return {doc["source_id"]: doc for doc in json.loads(result.stdout)["items"]}


# --- local mode ----------------------------------------------------------------------------------------
def test_ingest_globs_files_and_urls_then_unchanged_then_prune(workdir: Path, local_env, web_page: str) -> None:
    first = carrag(local_env, "ingest", "./docs/**/*", "manual.pdf", web_page, "--tags", "Demo, handbook")
    assert first.exit_code == 0, first.output
    # a source id is the path below the folder named: the glob's base (docs), a lone file's own folder
    assert "✓ ingested  guide.md" in first.output and "✓ ingested  sub/faq.md" in first.output
    assert "✓ ingested  manual.pdf" in first.output and f"✓ ingested  {web_page}" in first.output
    assert "4 sources: 4 ingested, 0 unchanged, 0 failed, 1 skipped (unsupported type)" in first.output
    documents = stored(local_env)
    assert set(documents) == {"guide.md", "sub/faq.md", "manual.pdf", web_page}
    assert all({"demo", "handbook"} <= set(doc["tags"]) for doc in documents.values())
    assert documents[web_page]["source_type"] == "web"

    again = carrag(local_env, "ingest", "docs/**/*.md", "./manual.pdf")
    assert again.exit_code == 0, again.output
    assert "3 sources: 0 ingested, 3 unchanged, 0 failed" in again.output

    (workdir / "docs" / "guide.md").write_text("# Guide\n\nThe snapshot retention period is now ninety days.\n")
    (workdir / "docs" / "sub" / "faq.md").unlink()
    pruned = carrag(local_env, "ingest", "./docs/**/*.md", "manual.pdf", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert "✓ ingested  guide.md" in pruned.output and "(replaced the previous version)" in pruned.output
    assert "- pruned    sub/faq.md" in pruned.output
    assert "2 sources: 1 ingested, 1 unchanged, 0 failed, 1 pruned" in pruned.output
    after = stored(local_env)
    assert set(after) == {"guide.md", "manual.pdf", web_page}, "URL sources are never pruned"
    assert after["guide.md"]["document_id"] != documents["guide.md"]["document_id"]


def test_a_source_id_is_the_same_from_a_folder_a_glob_or_a_file_and_never_taken_twice(workdir: Path, local_env) -> None:
    (workdir / "other").mkdir()
    (workdir / "other" / "guide.md").write_text("# Other guide\n\nThe other guide keeps backups for a week.\n")
    assert carrag(local_env, "ingest", "docs").exit_code == 0
    for same in (["docs/**/*.md"], [str(workdir / "docs" / "guide.md")], ["docs/guide.md", "./docs/sub"]):
        again = carrag(local_env, "ingest", *same)
        assert again.exit_code == 0 and "0 ingested" in again.output and " unchanged" in again.output, again.output
    assert set(stored(local_env)) == {"guide.md", "sub/faq.md"}

    clash = carrag(local_env, "ingest", "docs/guide.md", "other/guide.md")
    assert clash.exit_code == 1, clash.output
    assert "✗ failed    other/guide.md: same source id 'guide.md' as docs/guide.md" in clash.output
    assert "ingest . instead" in clash.output, "it names the folder that tells them apart"
    assert set(stored(local_env)) == {"guide.md", "sub/faq.md"}, "neither replaced the other"


def test_a_failing_source_does_not_stop_the_others(workdir: Path, local_env) -> None:
    (workdir / "empty.txt").write_bytes(b"")
    (workdir / "tool.exe").write_bytes(b"MZ")
    result = carrag(local_env, "ingest", "missing.md", "empty.txt", "docs/guide.md", "tool.exe", "nothing/*.md")
    assert result.exit_code == 1, result.output
    assert "✗ failed    missing.md: no such file or directory" in result.output
    assert "✗ failed    empty.txt: empty.txt is empty." in result.output
    assert "✗ failed    tool.exe: Unsupported file type (.exe)" in result.output
    assert "! no files  nothing/*.md" in result.output
    assert "✓ ingested  guide.md" in result.output
    assert "4 sources: 1 ingested, 0 unchanged, 3 failed" in result.output
    assert set(stored(local_env)) == {"guide.md"}


def test_ingest_json_prints_every_outcome_on_stdout_and_the_lines_on_stderr(workdir: Path, local_env) -> None:
    (workdir / "empty.txt").write_bytes(b"")
    result = carrag(local_env, "ingest", "docs/guide.md", "empty.txt", "missing.md", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    outcomes = {entry["source"]: entry for entry in report["sources"]}
    assert outcomes["guide.md"]["status"] == "ingested" and outcomes["guide.md"]["chunk_count"] >= 1
    assert outcomes["empty.txt"]["status"] == "failed" and "empty" in outcomes["empty.txt"]["error"]
    assert outcomes["missing.md"] == {"source": "missing.md", "status": "failed", "error": "no such file or directory"}
    assert report["counts"]["ingested"] == 1 and report["counts"]["failed"] == 2
    assert "✓ ingested  guide.md" in result.stderr

    again = carrag(local_env, "ingest", "docs/guide.md", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["sources"][0]["status"] == "unchanged"


def test_query_search_and_documents(workdir: Path, local_env) -> None:
    assert carrag(local_env, "ingest", "manual.pdf", "--tags", "trucks").exit_code == 0
    assert carrag(local_env, "ingest", "docs/guide.md").exit_code == 0

    answer = carrag(local_env, "query", "Which oil filter fits the engine?", "--top-k", "2")
    assert answer.exit_code == 0, answer.output
    assert "Motorcraft" in answer.stdout and "[Source 1]" in answer.stdout
    assert "Sources\n  [1] manual.pdf (p. 1, chunk 0)" in answer.stdout

    table = carrag(local_env, "search", "oil filter FL-500S", "--explain", "--top-k", "3")
    assert table.exit_code == 0, table.output
    header, first_row = table.stdout.splitlines()[:2]  # not a terminal: tab-separated, header first
    assert header.split("\t") == ["#", "score", "document_id", "source", "page", "bm25", "knn", "rrf", "text"]
    cells = first_row.split("\t")
    assert cells[0] == "1" and len(cells[2]) == 36 and cells[3:5] == ["manual.pdf", "p. 1"], "full ids in plain output"
    as_json = json.loads(carrag(local_env, "search", "oil filter FL-500S", "--json", "--explain").stdout)
    assert as_json["results"][0]["explain"]["bm25_rank"] == 1

    manual = stored(local_env)["manual.pdf"]
    listing = carrag(local_env, "documents", "list", "--tag", "Trucks")
    assert listing.exit_code == 0 and manual["document_id"] in listing.stdout and "guide.md" not in listing.stdout
    shown = carrag(local_env, "documents", "show", manual["document_id"], "--full")
    assert shown.exit_code == 0, shown.output
    assert re.search(r"^source_id\tmanual\.pdf$", shown.stdout, re.M) and "system.total_pages" in shown.stdout
    assert re.search(r"^collection\tdefault$", shown.stdout, re.M), "which collection the copy shown is in"
    assert re.search(r"^2\tpp\. 3–4\t", shown.stdout, re.M) and "FL-500S" in shown.stdout

    refused = carrag(local_env, "documents", "delete", manual["document_id"], input="n\n")
    assert refused.exit_code == 1 and "manual.pdf" in stored(local_env)
    deleted = carrag(local_env, "documents", "delete", manual["document_id"], "--yes")
    assert deleted.exit_code == 0 and f"Deleted {manual['document_id']} (manual.pdf)." in deleted.stdout
    gone = carrag(local_env, "documents", "show", manual["document_id"])
    assert gone.exit_code == 1 and f"No document matches '{manual['document_id']}'" in gone.stderr


def test_reindex_re_embeds_a_store_built_by_another_model(workdir: Path, local_env, tmp_path: Path) -> None:
    class OtherModel:
        provider, model, identity, dimension = "test", "other", "test:other", 8

        async def embed(self, texts, kind):
            return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    async def build_store_with_other_model() -> None:
        settings = Settings(_env_file=None, data_dir=tmp_path / "data", per_host_delay=0)
        container = await build_container(settings, embedding_backend=OtherModel(), llm=ExtractiveLLM("tests"))
        for name in ("old.txt", "older.txt"):
            await container.ingestion.ingest_text(
                f"The {name} snapshot retention is ninety days.", name, IngestCommand()
            )
        await container.fetcher.aclose()
        await container.store.close()

    asyncio.run(build_store_with_other_model())
    # test:other cannot be loaded here: the question is answered from BM25 alone until the reindex (no 409)
    answered = carrag(local_env, "query", "snapshot retention")
    assert answered.exit_code == 0 and "lexical (BM25) results only" in " ".join(answered.output.split())
    searched = carrag(local_env, "search", "snapshot retention")
    assert searched.exit_code == 0 and "lexical (BM25) results only" in " ".join(searched.output.split())

    result = carrag(local_env, "reindex")
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "re-embedding" in output and "2/2 chunks" in output, output
    assert "Reindexed with local:all-MiniLM-L6-v2 (384-d): 2 chunks" in output, output
    assert set(stored(local_env)) == {"old.txt", "older.txt"}, "every document kept"
    assert carrag(local_env, "ingest", "docs/guide.md").exit_code == 0, "the store now takes the configured model"


def test_reset_recovers_from_an_embedding_model_change(workdir: Path, local_env, tmp_path: Path) -> None:
    class OtherModel:
        provider, model, identity, dimension = "test", "other", "test:other", 8

        async def embed(self, texts, kind):
            return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    async def build_store_with_other_model() -> None:
        settings = Settings(_env_file=None, data_dir=tmp_path / "data", per_host_delay=0)
        container = await build_container(settings, embedding_backend=OtherModel(), llm=ExtractiveLLM("tests"))
        await container.ingestion.ingest_text("Built with another model.", "old.txt", IngestCommand())
        await container.fetcher.aclose()
        await container.store.close()

    asyncio.run(build_store_with_other_model())

    refused = carrag(local_env, "ingest", "docs/guide.md")
    assert refused.exit_code == 1
    message = " ".join(refused.output.split())
    assert "test:other (8-d)" in message and "local:all-MiniLM-L6-v2 (384-d)" in message
    assert "`carrag reset`" in message
    assert carrag(local_env, "ingest", "docs/guide.md", "--force").exit_code == 1, "force never wipes the store"

    declined = carrag(local_env, "reset", input="n\n")
    assert declined.exit_code == 1
    reset = carrag(local_env, "reset", input="y\n")
    assert reset.exit_code == 0 and "Store reset: 1 document deleted." in reset.output, reset.output
    again = carrag(local_env, "ingest", "docs/guide.md")
    assert again.exit_code == 0, again.output
    assert set(stored(local_env)) == {"guide.md"}, "the old model's documents are gone"


# --- against a running server (--url) --------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with server_process(
        tmp_path_factory.mktemp("cli-server"), LLM="none", API_KEYS=API_KEY, FETCH_ALLOWED_HOSTS="127.0.0.1"
    ) as running:
        yield running


def test_remote_mode_uses_jobs_streams_and_manages_documents(workdir: Path, local_env, server, web_page: str) -> None:
    remote = local_env | {"CARRAG_URL": server.url, "CARRAG_API_KEY": API_KEY}

    no_key = carrag(local_env, "documents", "list", "--url", server.url)
    assert no_key.exit_code == 1 and "API key" in no_key.stderr
    assert "--api-key" in no_key.stderr and "CARRAG_API_KEY" in no_key.stderr, "a refused key says how to give one"

    (workdir / "blank.md").write_text("   \n\n  \n")
    ingested = carrag(remote, "ingest", "docs/**/*.md", "manual.pdf", "blank.md", web_page, "--tags", "remote")
    assert ingested.exit_code == 1, ingested.output
    assert "✗ failed    blank.md: blank.md contains no extractable text." in ingested.output
    assert "5 sources: 4 ingested, 0 unchanged, 1 failed" in ingested.output
    jobs = httpx.get(f"{server.url}/jobs", headers={"Authorization": f"Bearer {API_KEY}"}).json()["items"]
    assert {job["source"] for job in jobs} >= {"guide.md", "faq.md", "manual.pdf", web_page}, "ingested as jobs"
    assert {job["source"]: job["state"] for job in jobs}["blank.md"] == "failed"
    documents = stored(remote)
    assert set(documents) == {"guide.md", "sub/faq.md", "manual.pdf", web_page}
    listed_jobs = carrag(remote, "jobs", "--json")
    assert listed_jobs.exit_code == 0 and {job["source"] for job in json.loads(listed_jobs.stdout)["items"]} >= {
        "guide.md",
        "blank.md",
    }
    plain_jobs = carrag(remote, "jobs").stdout.splitlines()
    assert plain_jobs[0].split("\t") == ["job_id", "state", "progress", "source", "document_id", "created"]
    assert any(line.split("\t")[1:2] == ["failed"] and "blank.md" in line for line in plain_jobs)

    (workdir / "docs" / "sub" / "faq.md").unlink()
    pruned = carrag(remote, "ingest", "docs/**/*.md", "manual.pdf", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert "2 sources: 0 ingested, 2 unchanged, 0 failed, 1 pruned" in pruned.output
    assert set(stored(remote)) == {"guide.md", "manual.pdf", web_page}

    answer = carrag(remote, "query", "How should the safety chains be attached?")
    assert answer.exit_code == 0, answer.output
    assert "safety chains" in answer.stdout and "[Source 1]" in answer.stdout
    assert f"[1] {web_page}" in answer.stdout

    table = carrag(remote, "search", "snapshot retention")
    assert table.exit_code == 0 and "guide.md" in table.stdout

    guide = documents["guide.md"]["document_id"]
    shown = carrag(remote, "documents", "show", guide)
    assert shown.exit_code == 0 and "thirty days" in shown.stdout
    assert carrag(remote, "documents", "delete", guide, "--yes").exit_code == 0
    missing = carrag(remote, "documents", "delete", guide, "--yes")
    assert missing.exit_code == 1 and "No document matches" in missing.stderr

    reset = carrag(remote, "reset", "--yes")
    assert reset.exit_code == 0 and "Store reset: 2 documents deleted." in reset.output, reset.output
    assert stored(remote) == {}


def test_an_upload_and_the_cli_ingest_of_the_same_file_are_one_source(workdir: Path, local_env, server) -> None:
    """The web UI and curl upload a file under its name; `carrag ingest docs/brakes.md` gives it the same
    source id, so the second is the same document, unchanged, not a second copy."""
    remote = local_env | {"CARRAG_URL": server.url, "CARRAG_API_KEY": API_KEY}
    (workdir / "docs" / "brakes.md").write_text("# Brakes\n\nBleed the brakes every two years with DOT 4 fluid.\n")
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with (workdir / "docs" / "brakes.md").open("rb") as handle:  # as `curl -F file=@docs/brakes.md` sends it
        uploaded = httpx.post(f"{server.url}/ingest/file", files={"file": ("brakes.md", handle)}, headers=headers)
    assert uploaded.status_code == 200 and uploaded.json()["status"] == "ingested", uploaded.text

    result = carrag(remote, "ingest", "docs/brakes.md")
    assert result.exit_code == 0, result.output
    assert "= unchanged brakes.md" in result.output
    assert "1 sources: 0 ingested, 1 unchanged, 0 failed" in result.output
    documents = stored(remote)
    assert documents["brakes.md"]["document_id"] == uploaded.json()["document_id"]
    assert carrag(remote, "documents", "delete", documents["brakes.md"]["document_id"], "--yes").exit_code == 0

"""POST /sync and POST /ingest/url with ``crawl`` over HTTP: 202 with a job whose record carries the
report; refusals before any job (403 outside SYNC_ROOTS, 400, 404, 409 while one runs)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.container import Container
from tests.conftest import close_container, make_settings, open_container
from tests.job_helpers import poll_job
from tests.services.sync.helpers import TOPICS, note, write
from tests.services.sync.site import Site, html

FINISHED = {"done", "failed", "cancelled"}


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    base = tmp_path / "shared"
    for number, topic in enumerate(TOPICS[:3]):
        write(base / "handbook", f"part-{number}.md", note(topic))
    return base


@pytest.fixture
async def api(tmp_path: Path, roots: Path, embedding_backend) -> AsyncIterator[tuple[httpx.AsyncClient, Container]]:
    settings = make_settings(tmp_path / "data", sync_roots=str(roots), fetch_allowed_hosts="127.0.0.1")
    container = await open_container(settings, embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        yield client, container
    await close_container(container)


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as site:
        site.pages["/guide/index.html"] = html("Guide", "Start here for the fleet guide.", "oil.html")
        site.pages["/guide/oil.html"] = html("Oil", "Change the engine oil every 15,000 km.")
        yield site


async def test_a_folder_synced_over_http(api: tuple[httpx.AsyncClient, Container], roots: Path) -> None:
    client, _ = api
    folder = roots / "handbook"
    response = await client.post(
        "/sync", json={"path": str(folder), "tags": ["handbook"], "metadata": {"team": "fleet"}}
    )
    assert response.status_code == 202, response.text
    assert response.headers["location"] == response.json()["status_url"]
    job = await poll_job(client, response.json()["job_id"], FINISHED)
    assert job["kind"] == "sync" and job["state"] == "done" and job["source"] == folder.as_posix()
    assert job["progress"] == {"done": 3, "total": 3}
    assert {k: v for k, v in job["report"]["counts"].items() if v} == {"added": 3}
    assert sorted(item["source"] for item in job["report"]["sources"]) == ["part-0.md", "part-1.md", "part-2.md"]
    documents = (await client.get("/documents")).json()["items"]
    assert all("handbook" in d["tags"] and d["metadata"]["team"] == "fleet" for d in documents)
    assert all(d["metadata"]["sync.root"] == folder.as_posix() for d in documents)

    (folder / "part-0.md").unlink()
    again = await poll_job(client, (await client.post("/sync", json={"path": str(folder)})).json()["job_id"], FINISHED)
    assert again["job_id"] == job["job_id"], "one job id per folder and collection: its latest run"
    assert {k: v for k, v in again["report"]["counts"].items() if v} == {"deleted": 1, "unchanged": 2}
    assert (await client.get("/documents")).json()["total"] == 2


async def test_refusals_come_before_any_job(api: tuple[httpx.AsyncClient, Container], roots: Path, tmp_path) -> None:
    client, container = api
    outside = tmp_path / "private"
    outside.mkdir()
    cases = [
        ({"path": str(outside)}, 403, "not under a directory named in SYNC_ROOTS"),
        ({"path": str(roots / "handbook/../../private")}, 403, "SYNC_ROOTS"),
        ({"path": str(roots / "missing")}, 400, "not a directory"),
        ({"path": "handbook"}, 400, "absolute path"),
        ({"path": str(roots), "collection": "nope"}, 404, "nope"),
        ({"path": str(roots), "globs": ["*.md"] * 51}, 422, ""),
    ]
    for body, status, reason in cases:
        response = await client.post("/sync", json=body)
        assert response.status_code == status, (body, response.text)
        assert reason in str(response.json()["detail"])
    assert await container.jobs.total() == 0


async def test_a_second_sync_while_one_runs_is_409(api: tuple[httpx.AsyncClient, Container], roots: Path) -> None:
    client, container = api
    release = asyncio.Event()
    original = container.ingestion.ingest_file

    async def held(*args, **kwargs):
        await release.wait()
        return await original(*args, **kwargs)

    container.ingestion.ingest_file = held  # type: ignore[method-assign]
    first = await client.post("/sync", json={"path": str(roots)})
    second = await client.post("/sync", json={"path": str(roots)})
    assert (first.status_code, second.status_code) == (202, 409)
    assert f"DELETE /jobs/{first.json()['job_id']}" in second.json()["detail"]
    cancelled = await client.delete(first.json()["status_url"])
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    release.set()


async def test_a_site_crawled_over_http(api: tuple[httpx.AsyncClient, Container], site: Site) -> None:
    client, _ = api
    body = {"url": site.url("/guide/index.html"), "crawl": {"max_pages": 10, "max_depth": 2}}
    response = await client.post("/ingest/url", json=body)
    assert response.status_code == 202, response.text
    job = await poll_job(client, response.json()["job_id"], FINISHED)
    assert job["kind"] == "crawl" and job["state"] == "done", job
    assert {k: v for k, v in job["report"]["counts"].items() if v} == {"added": 2}
    assert job["report"]["root"] == site.url("/guide/")
    too_many = await client.post("/ingest/url", json={**body, "crawl": {"max_pages": 10**6}})
    assert too_many.status_code == 400 and "CRAWL_MAX_PAGES" in too_many.json()["detail"]
    named = await client.post("/ingest/url", json={**body, "source_id": "guide"})
    assert named.status_code == 400 and "source_id" in named.json()["detail"]

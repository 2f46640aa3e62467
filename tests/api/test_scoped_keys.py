"""Scoped API keys (API_KEY_SCOPES) on every route.

The route table is read from the app (``app.routes``): every route must be listed below under what it
does with a key's scope (`MUTATING`, `NAMES_A_COLLECTION`, `ONE_DOCUMENT_OR_JOB`, `LISTINGS`, `ADMIN`,
`MCP`) or in `SCOPE_FREE` on purpose, else `test_every_route_has_scope_handling` fails: a new route
must say how scoped keys reach it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from carrag.api.main import create_app
from carrag.services.container import Container
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from tests.conftest import (
    ES_TEST_REFRESH_INTERVAL,
    FIXTURES,
    close_container,
    drop_es_index,
    es_index_name,
    make_settings,
    open_container,
)
from tests.live_server import LiveServer
from tests.security.test_auth_and_cors import endpoints, is_public

FULL = "full-key-not-in-scopes"  # in API_KEYS only: full access
READER = "reader-key-all-collections"  # read-only, every collection
TEAM = "team-key-team-a-only"  # collection team-a, may write
TEAM_READER = "team-reader-key"  # collection team-a, read-only
SCOPES = {
    READER: {"read_only": True},
    TEAM: {"collections": ["team-a"]},
    TEAM_READER: {"collections": ["team-a"], "read_only": True},
}


@dataclass
class World:
    app: FastAPI
    client: httpx.AsyncClient
    container: Container
    document_id: str  # in the default collection
    job_id: str  # an ingest job into the default collection (finished)
    team_document_id: str  # in team-a, ingested by TEAM through an ingest job
    team_job_id: str

    async def call(self, key: str, route: tuple[str, str], build: Build) -> httpx.Response:
        method = route[0]
        url, kwargs = build(self)
        async with asyncio.timeout(60):
            return await self.client.request(method, url, headers={"Authorization": f"Bearer {key}"}, **kwargs)


Build = Callable[[World], tuple[str, dict[str, Any]]]


def upload(world: World) -> tuple[str, dict[str, Any]]:
    return "/ingest/file", {"files": {"file": ("new.txt", b"Winter tyres need 3 mm of tread.", "text/plain")}}


def fetch(world: World) -> tuple[str, dict[str, Any]]:
    return "/ingest/url", {"json": {"url": "http://127.0.0.1:9/page"}}


def folder_sync(world: World) -> tuple[str, dict[str, Any]]:
    return "/sync", {"json": {"path": "/srv/handbook"}}


def document(suffix: str = "", **kwargs: Any) -> Build:
    return lambda world: (f"/documents/{world.document_id}{suffix}", kwargs)


def job(**kwargs: Any) -> Build:
    return lambda world: (f"/jobs/{world.job_id}", kwargs)


def fixed(url: str, **kwargs: Any) -> Build:
    return lambda world: (url, kwargs)


QUESTION = {"question": "How often is the brake fluid replaced?", "rerank": False}
CHAT = {"model": "carrag", "messages": [{"role": "user", "content": QUESTION["question"]}]}

# Every route that changes something: a read-only key gets 403 (on what it may see).
MUTATING: dict[tuple[str, str], Build] = {
    ("POST", "/ingest/file"): upload,
    ("POST", "/ingest/url"): fetch,
    ("POST", "/sync"): folder_sync,
    ("PATCH", "/documents/{document_id}"): document(json={"tags": ["changed"]}),
    ("DELETE", "/documents/{document_id}"): document(),
    ("DELETE", "/documents"): fixed("/documents?source_id=manuals/brakes.txt"),
    ("DELETE", "/jobs/{job_id}"): job(),
    ("POST", "/admin/reset"): fixed("/admin/reset", json={"confirm": True}),
    ("POST", "/admin/reindex"): fixed("/admin/reindex"),
    ("POST", "/collections"): fixed("/collections", json={"name": "team-b"}),
    ("PATCH", "/collections/{name}"): fixed("/collections/team-a", json={"name": "team-a-renamed"}),
    ("DELETE", "/collections/{name}"): fixed("/collections/team-a"),
}
# Routes that name a collection, or default to one: a key without it gets 403.
NAMES_A_COLLECTION: dict[tuple[str, str], Build] = {
    ("POST", "/search"): fixed("/search", json=QUESTION),
    ("POST", "/query"): fixed("/query", json=QUESTION),
    ("POST", "/query/stream"): fixed("/query/stream", json=QUESTION),
    ("POST", "/v1/chat/completions"): fixed("/v1/chat/completions", json=CHAT),
    ("POST", "/ingest/file"): upload,
    ("POST", "/ingest/url"): fetch,
    ("POST", "/sync"): folder_sync,
    ("GET", "/collections/{name}"): fixed("/collections/default"),
    ("GET", "/documents"): fixed("/documents?collection=default"),
    ("DELETE", "/documents"): fixed("/documents?source_id=manuals/brakes.txt"),
}
# Routes about one document or job: 404 when its collection is outside the key's scope.
ONE_DOCUMENT_OR_JOB: dict[tuple[str, str], Build] = {
    ("GET", "/documents/{document_id}"): document(),
    ("GET", "/documents/{document_id}/chunks"): document("/chunks"),
    ("GET", "/documents/{document_id}/file"): document("/file"),
    ("GET", "/documents/{document_id}/pages/{page}/image"): document("/pages/1/image?chunk=0"),
    ("PATCH", "/documents/{document_id}"): document(json={"tags": ["changed"]}),
    ("DELETE", "/documents/{document_id}"): document(),
    ("GET", "/jobs/{job_id}"): job(),
    ("DELETE", "/jobs/{job_id}"): job(),
}
# Reads that reach the world's document and refuse it for its format (a page picture of a .txt file):
# the key got through; the route's own tests (tests/api/test_pages.py) draw a PDF's pages.
REACHED_BUT_REFUSED = {("GET", "/documents/{document_id}/pages/{page}/image"): 409}
# Listings: only what the key may see (checked in test_listings_show_only_what_the_key_may_see).
LISTINGS = {("GET", "/documents"), ("GET", "/jobs"), ("GET", "/collections"), ("GET", "/v1/models")}
# Administration: a key limited in any way gets 403.
ADMIN = {("POST", "/admin/reset"), ("POST", "/collections"), ("PATCH", "/collections/{name}")}
ADMIN |= {("DELETE", "/collections/{name}"), ("POST", "/admin/reindex"), ("GET", "/admin/reindex")}
ADMIN_READS: dict[tuple[str, str], Build] = {("GET", "/admin/reindex"): fixed("/admin/reindex")}
# /mcp: one ASGI endpoint; its tools check the key's scope (test_mcp_tools_respect_the_scope).
MCP = {("POST", "/mcp")}
# Nothing in them belongs to a collection: any valid key.
SCOPE_FREE = {
    ("GET", "/metrics"): "service counters, no document content",
}


def test_every_route_has_scope_handling(world: World) -> None:
    covered = set(MUTATING) | set(NAMES_A_COLLECTION) | set(ONE_DOCUMENT_OR_JOB) | LISTINGS | ADMIN | MCP
    covered |= set(SCOPE_FREE)
    routes = {route for route in endpoints(world.app) if not is_public(route[1])}
    assert routes, "the route walk found the API"
    assert routes - covered == set(), "routes without a scoped-key test: list them in tests/api/test_scoped_keys.py"
    assert covered - routes == set(), "listed routes the app no longer has"


@pytest.fixture
async def world(tmp_path, embedding_backend) -> AsyncIterator[World]:
    container = await open_container(keyed_settings(tmp_path), embedding_backend)
    app = create_app(container=container)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://carrag.test", timeout=60) as client:
        brakes = (FIXTURES / "corpus" / "brakes.txt").read_bytes()
        stored = await container.ingestion.ingest_file(brakes, "manuals/brakes.txt", IngestCommand())
        files = {"file": ("oil.txt", (FIXTURES / "corpus" / "oil_service.txt").read_bytes(), "text/plain")}
        accepted = await client.post(
            "/ingest/file?async=true", files=files, headers={"Authorization": f"Bearer {FULL}"}
        )
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        created = await client.post(
            "/collections", json={"name": "team-a"}, headers={"Authorization": f"Bearer {FULL}"}
        )
        assert created.status_code == 201, created.text
        tires = (FIXTURES / "corpus" / "tire_pressure.txt").read_bytes()
        accepted = await client.post(
            "/ingest/file?async=true",
            files={"file": ("tires.txt", tires, "text/plain")},
            data={"collection": "team-a"},
            headers={"Authorization": f"Bearer {TEAM}"},
        )
        assert accepted.status_code == 202, accepted.text
        team_job_id = accepted.json()["job_id"]
        for waited in (job_id, team_job_id):
            while not (await container.jobs.get(waited)).finished:
                await asyncio.sleep(0.05)
        team_job = await container.jobs.get(team_job_id)
        assert team_job.result is not None, team_job.error
        yield World(app, client, container, stored.document_id, job_id, team_job.result.document_id, team_job_id)
    await close_container(container)


def forbidden(response: httpx.Response, reason: str) -> None:
    assert response.status_code == 403, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    assert reason in response.json()["detail"], response.json()


async def document_unchanged(world: World) -> None:
    record = await world.container.store.get_document(world.document_id)
    assert record is not None and "changed" not in record.tags


@pytest.mark.parametrize("route", sorted(MUTATING))
async def test_read_only_keys_may_change_nothing(world: World, route: tuple[str, str]) -> None:
    before = (await world.container.store.list_documents(offset=0, limit=10)).total
    for key in (READER, TEAM_READER) if route not in ONE_DOCUMENT_OR_JOB else (READER,):
        forbidden(await world.call(key, route, MUTATING[route]), "read-only")
    await document_unchanged(world)
    assert (await world.container.store.list_documents(offset=0, limit=10)).total == before
    assert await world.container.jobs.total() == 2
    assert [c.name for c in await world.container.collections.list()] == ["default", "team-a"]


@pytest.mark.parametrize("route", sorted(NAMES_A_COLLECTION))
async def test_a_collection_outside_the_scope_is_forbidden(world: World, route: tuple[str, str]) -> None:
    response = await world.call(TEAM, route, NAMES_A_COLLECTION[route])
    forbidden(response, "collection 'default'")
    if route == ("POST", "/v1/chat/completions"):
        assert response.json()["error"]["type"] == "permission_error"


@pytest.mark.parametrize("route", sorted(ONE_DOCUMENT_OR_JOB))
async def test_a_document_or_job_outside_the_scope_does_not_exist(world: World, route: tuple[str, str]) -> None:
    for key in (TEAM, TEAM_READER):
        response = await world.call(key, route, ONE_DOCUMENT_OR_JOB[route])
        assert response.status_code == 404, (key, response.status_code, response.text[:300])
        assert "No " in response.json()["detail"]
    await document_unchanged(world)


@pytest.mark.parametrize("route", sorted(ADMIN))
async def test_admin_needs_full_access(world: World, route: tuple[str, str]) -> None:
    build = ADMIN_READS.get(route) or MUTATING[route]
    for key, reason in ((TEAM, "access to every collection"), (READER, "read-only"), (TEAM_READER, "read-only")):
        forbidden(await world.call(key, route, build), reason)
    response = await world.call(FULL, route, build)
    assert response.status_code in (200, 201, 202), response.text[:300]
    if route == ("POST", "/admin/reset"):
        assert response.json()["documents_deleted"] == 3


async def test_listings_show_only_what_the_key_may_see(world: World) -> None:
    everything = (3, 2, ["default", "team-a"], ["carrag", "carrag:team-a"])
    team_a = (1, 1, ["team-a"], ["carrag:team-a"])
    for key, (documents, jobs, collections, models) in (
        (FULL, everything),
        (READER, everything),
        (TEAM, team_a),
        (TEAM_READER, team_a),
    ):
        page = (await world.call(key, ("GET", "/documents"), fixed("/documents"))).json()
        assert (len(page["items"]), page["total"]) == (documents, documents), key
        if key in (TEAM, TEAM_READER):
            assert [item["document_id"] for item in page["items"]] == [world.team_document_id]
        listed = (await world.call(key, ("GET", "/jobs"), fixed("/jobs"))).json()
        assert (len(listed["items"]), listed["total"]) == (jobs, jobs), key
        shown = (await world.call(key, ("GET", "/collections"), fixed("/collections"))).json()
        assert [item["name"] for item in shown["items"]] == collections, key
        served = (await world.call(key, ("GET", "/v1/models"), fixed("/v1/models"))).json()
        assert [model["id"] for model in served["data"]] == models, key


async def test_a_scoped_key_works_inside_its_scope(world: World) -> None:
    team_document = f"/documents/{world.team_document_id}"
    in_team_a = {"question": "What tyre pressure?", "collection": "team-a", "rerank": False}
    reads = [
        ("GET", team_document, {}),
        ("GET", f"{team_document}/chunks", {}),
        ("GET", f"{team_document}/file", {}),  # uploaded through an ingest job: its original is kept
        ("GET", f"/jobs/{world.team_job_id}", {}),
        ("GET", "/collections/team-a", {}),
        ("GET", "/documents?collection=team-a", {}),
        ("POST", "/search", {"json": in_team_a}),
        ("POST", "/query", {"json": in_team_a}),
        ("POST", "/v1/chat/completions", {"json": {**CHAT, "model": "carrag:team-a"}}),
    ]
    for key in (TEAM, TEAM_READER):
        for method, url, kwargs in reads:
            response = await world.call(key, (method, url), fixed(url, **kwargs))
            assert response.status_code == 200, (key, method, url, response.text[:300])
    picture = f"{team_document}/pages/1/image"
    for key in (TEAM, TEAM_READER):  # reached: refused for what the document is, not for the key
        refused = await world.call(key, ("GET", picture), fixed(picture))
        assert refused.status_code == 409 and "only for PDFs" in refused.json()["detail"], refused.text
    hits = (await world.call(TEAM, ("POST", "/search"), fixed("/search", json=in_team_a))).json()["results"]
    assert hits and {hit["document_id"] for hit in hits} == {world.team_document_id}
    patch = fixed(team_document, json={"tags": ["changed"]})
    forbidden(await world.call(TEAM_READER, ("PATCH", team_document), patch), "read-only")
    assert (await world.call(TEAM, ("PATCH", team_document), patch)).json()["tags"] == ["changed"]
    both = {**in_team_a, "collection": None, "collections": ["team-a", "default"]}
    forbidden(await world.call(TEAM, ("POST", "/search"), fixed("/search", json=both)), "collection 'default'")
    upload_to_default = fixed("/ingest/file", files=upload(world)[1]["files"], data={"collection": "default"})
    forbidden(await world.call(TEAM, ("POST", "/ingest/file"), upload_to_default), "may not write to collection")
    unknown = fixed("/search", json={**in_team_a, "collection": "team-z"})
    forbidden(await world.call(TEAM, ("POST", "/search"), unknown), "collection 'team-z'")  # 403 before 404


@pytest.mark.parametrize("key", [FULL, READER])
async def test_keys_that_reach_the_collection_read_as_before(world: World, key: str) -> None:
    reads = {**NAMES_A_COLLECTION, **ONE_DOCUMENT_OR_JOB}
    for route, build in sorted(reads.items()):
        if route in MUTATING:
            continue
        response = await world.call(key, route, build)
        expected = REACHED_BUT_REFUSED.get(route, 200)
        assert response.status_code == expected, (key, route, response.status_code, response.text[:300])
    for route in SCOPE_FREE:
        response = await world.call(key, route, fixed(route[1]))
        assert response.status_code == 200, (key, route, response.status_code)


@pytest.mark.parametrize("route", sorted(MUTATING))
async def test_a_key_not_in_api_key_scopes_keeps_full_access(world: World, route: tuple[str, str]) -> None:
    response = await world.call(FULL, route, MUTATING[route])
    expected = {
        ("POST", "/ingest/file"): 200,
        ("POST", "/ingest/url"): 400,  # refused by the fetcher (a loopback address), not by the key
        ("POST", "/sync"): 403,  # refused by SYNC_ROOTS (unset), not by the key
        ("PATCH", "/documents/{document_id}"): 200,
        ("DELETE", "/documents/{document_id}"): 200,
        ("DELETE", "/documents"): 200,
        ("DELETE", "/jobs/{job_id}"): 409,  # already finished
        ("POST", "/admin/reset"): 200,
        ("POST", "/admin/reindex"): 202,
        ("POST", "/collections"): 201,
        ("PATCH", "/collections/{name}"): 200,
        ("DELETE", "/collections/{name}"): 200,
    }
    assert response.status_code == expected[route], (route, response.text[:300])


def keyed_settings(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path,
        api_keys=",".join([FULL, READER, TEAM, TEAM_READER]),
        api_key_scopes=json.dumps(SCOPES),
        tagger="off",
        rerank_enabled=False,
    )


async def test_mcp_tools_respect_the_scope(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(keyed_settings(tmp_path), embedding_backend)
    brakes = (FIXTURES / "corpus" / "brakes.txt").read_bytes()
    await container.ingestion.ingest_file(brakes, "manuals/brakes.txt", IngestCommand())
    await container.collections.create("team-a")
    try:
        await check_mcp_tools(create_app(container=container))
    finally:
        await close_container(container)


async def check_mcp_tools(app: FastAPI) -> None:
    with LiveServer(app) as served:
        for key in (FULL, TEAM):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
                async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:

                    async def call(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                        result = await client.call_tool(tool, arguments)
                        return result.is_error, result.content[0].text

                    found = await call("search_documents", {"query": "brake fluid", "top_k": 2})
                    in_team_a = await call("search_documents", {"query": "brake fluid", "collections": ["team-a"]})
                    both = await call("search_documents", {"query": "brake", "collections": ["team-a", "default"]})
                    listed = await call("list_sources", {})
                    collections = await call("list_collections", {})
            assert not in_team_a[0], in_team_a  # team-a is empty, and in both keys' scope
            if key == FULL:
                assert not found[0] and "[Source: manuals/brakes.txt" in found[1]
                assert not both[0] and "[Source: manuals/brakes.txt" in both[1]
                assert not listed[0] and "manuals/brakes.txt" in listed[1]
                assert "- default (1)" in collections[1] and "- team-a (0)" in collections[1]
            else:
                for refused in (found, both, listed):
                    assert refused[0] and "may not read collection 'default'" in refused[1], refused
                assert "- team-a (0)" in collections[1] and "default" not in collections[1]


async def test_the_access_log_names_the_key_used_never_the_key(world: World, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="carrag.access"):
        for key in (FULL, TEAM):
            await world.call(key, ("GET", "/documents"), fixed("/documents"))
    lines = [record for record in caplog.records if record.name == "carrag.access"]
    expected = ["key-" + hashlib.sha256(key.encode()).hexdigest()[:10] for key in (FULL, TEAM)]
    assert [getattr(record, "key_id", None) for record in lines] == expected
    assert not any(key in caplog.text for key in (FULL, TEAM))


async def test_resolving_a_reference_names_only_documents_the_key_may_see(world: World) -> None:
    """``GET /documents?ref=`` (what `carrag documents show <ref>` asks) never names a document outside the scope."""
    headers = {"Authorization": f"Bearer {TEAM}"}
    for reference in (world.document_id, world.document_id[:8], "manuals/brakes.txt", "brakes.txt"):
        everything = await world.client.get(
            "/documents", params={"ref": reference}, headers={"Authorization": f"Bearer {FULL}"}
        )
        assert [d["document_id"] for d in everything.json()["items"]] == [world.document_id], reference
        scoped = await world.client.get("/documents", params={"ref": reference}, headers=headers)
        assert scoped.status_code == 200 and scoped.json()["items"] == [], reference
    mine = await world.client.get("/documents", params={"ref": world.team_document_id[:8]}, headers=headers)
    assert [d["document_id"] for d in mine.json()["items"]] == [world.team_document_id]
    outside = await world.client.get(
        "/documents", params={"ref": "brakes.txt", "collection": "default"}, headers=headers
    )
    forbidden(outside, "collection 'default'")


@pytest.mark.elasticsearch
async def test_scopes_on_elasticsearch(tmp_path: Path, es_url: str, embedding_backend) -> None:
    """The same rules on the Elasticsearch store: its collection filters, and job records kept in its index."""
    settings = keyed_settings(tmp_path).model_copy(
        update={
            "store": "elasticsearch",
            "elasticsearch_url": es_url,
            "elasticsearch_index": es_index_name("carrag_scoped"),
            "elasticsearch_refresh_interval": ES_TEST_REFRESH_INTERVAL,
        }
    )
    container = await open_container(settings, embedding_backend)
    app = create_app(container=container)

    def as_key(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
            assert (await client.post("/collections", json={"name": "team-a"}, headers=as_key(FULL))).status_code == 201
            brakes = {"file": ("brakes.txt", (FIXTURES / "corpus" / "brakes.txt").read_bytes(), "text/plain")}
            tires = {"file": ("tires.txt", (FIXTURES / "corpus" / "tire_pressure.txt").read_bytes(), "text/plain")}
            default_job = await client.post("/ingest/file?async=true", files=brakes, headers=as_key(FULL))
            assert default_job.status_code == 202, default_job.text
            job_id = default_job.json()["job_id"]
            while not (await container.jobs.get(job_id)).finished:
                await asyncio.sleep(0.05)
            default_doc = (await container.jobs.get(job_id)).result.document_id  # type: ignore[union-attr]
            team = await client.post("/ingest/file", files=tires, data={"collection": "team-a"}, headers=as_key(TEAM))
            assert team.status_code == 200, team.text
            team_doc = team.json()["document_id"]

            listed = (await client.get("/documents", headers=as_key(TEAM))).json()
            assert [item["document_id"] for item in listed["items"]] == [team_doc]
            assert (await client.get("/documents", headers=as_key(FULL))).json()["total"] == 2
            assert (await client.get(f"/documents/{default_doc}", headers=as_key(TEAM))).status_code == 404
            assert (await client.get(f"/jobs/{job_id}", headers=as_key(TEAM))).status_code == 404
            assert (await client.get("/jobs", headers=as_key(TEAM))).json()["total"] == 0
            question = {"question": "tyre pressure brake fluid", "rerank": False}
            forbidden(await client.post("/search", json=question, headers=as_key(TEAM)), "collection 'default'")
            found = await client.post("/search", json={**question, "collection": "team-a"}, headers=as_key(TEAM))
            assert {hit["document_id"] for hit in found.json()["results"]} == {team_doc}
            patch = await client.patch(f"/documents/{team_doc}", json={"tags": ["x"]}, headers=as_key(TEAM_READER))
            forbidden(patch, "read-only")
    finally:
        if not container.startup_errors:
            await drop_es_index(container.store.client, settings.elasticsearch_index)  # type: ignore[attr-defined]
        await close_container(container)

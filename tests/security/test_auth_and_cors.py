"""Optional API-key auth and CORS.

Every route the app has is found by walking ``app.routes`` (and cross-checked against the OpenAPI
schema), so a route added later is covered without touching this file: it must either answer 401
without a key or be listed in `PUBLIC` on purpose.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI

from carrag.api.main import create_app
from tests.conftest import close_container, make_settings, open_container

KEY = "k3y-For-Tests_0123456789"
OTHER_KEY = "second-key"

# Reachable without a key, by design: the health family (probes, load balancers), the web UI page and
# its static files (the page asks the user for the key), and FastAPI's generated API docs.
PUBLIC = {"/health", "/health/live", "/health/ready", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
PUBLIC_PREFIXES = ("/ui",)


def walk_routes(app: FastAPI) -> Iterator[tuple[str, frozenset[str], bool]]:
    """(path, methods, in schema) of every route, flattening included routers."""

    def walk(routes) -> Iterator[tuple[str, frozenset[str], bool]]:
        for route in routes:
            contexts = getattr(route, "effective_route_contexts", None)  # FastAPI's included routers
            if contexts is not None:
                for context in contexts():
                    original = context.original_route
                    methods = frozenset(getattr(original, "methods", None) or ())
                    yield context.path or original.path, methods, bool(context.include_in_schema)
                continue
            methods = frozenset(getattr(route, "methods", None) or {"GET"})
            yield route.path, methods, bool(getattr(route, "include_in_schema", False))

    yield from walk(app.routes)


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def is_public(path: str) -> bool:
    return path in PUBLIC or any(path == p or path.startswith(p + "/") for p in PUBLIC_PREFIXES)


@pytest.fixture
async def keyed_app(tmp_path, embedding_backend) -> AsyncIterator[FastAPI]:
    settings = make_settings(tmp_path, api_keys=f"{KEY}, {OTHER_KEY}")
    container = await open_container(settings, embedding_backend)
    yield create_app(container=container)
    await close_container(container)


@pytest.fixture
async def keyed_client(keyed_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=keyed_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://carrag.test", timeout=30) as client:
        yield client


def endpoints(app: FastAPI) -> list[tuple[str, str]]:
    found = set()
    for path, methods, _ in walk_routes(app):
        for method in methods - {"HEAD", "OPTIONS"}:
            found.add((method, path))
    return sorted(found)


async def test_route_walk_sees_every_schema_operation(keyed_app: FastAPI) -> None:
    walked = {(m, p) for m, p in endpoints(keyed_app)}
    in_schema = {
        (method.upper(), path) for path, operations in keyed_app.openapi()["paths"].items() for method in operations
    }
    assert in_schema, "the schema lists operations"
    assert in_schema <= walked, f"routes the walk missed: {in_schema - walked}"


async def request(client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str]) -> int | None:
    """The status, or None when the route was still streaming after a few seconds (so it accepted)."""
    try:
        async with asyncio.timeout(10):
            response = await client.request(method, concrete(path), headers=headers)
    except TimeoutError:
        return None
    return response.status_code


async def test_every_non_public_route_needs_a_valid_key(keyed_app: FastAPI, keyed_client: httpx.AsyncClient) -> None:
    async with keyed_app.router.lifespan_context(keyed_app):  # MCP needs its session manager running
        checked = await check_every_route(keyed_app, keyed_client)
    assert ("POST", "/ingest/file") in checked and ("GET", "/documents") in checked and ("POST", "/search") in checked


async def check_every_route(keyed_app: FastAPI, keyed_client: httpx.AsyncClient) -> list[tuple[str, str]]:
    checked = []
    for method, path in endpoints(keyed_app):
        if is_public(path):
            continue
        checked.append((method, path))
        for headers in (
            {},
            {"Authorization": "Bearer wrong-key"},
            {"Authorization": f"Bearer {KEY}x"},
            {"Authorization": f"Bearer {KEY[:-1]}"},
            {"Authorization": f"Basic {KEY}"},
            {"Authorization": KEY},
            {"X-API-Key": KEY},
        ):
            response = await keyed_client.request(method, concrete(path), headers=headers)
            assert response.status_code == 401, (method, path, headers, response.status_code, response.text[:200])
            assert response.json()["detail"], (method, path)
            assert response.headers.get("www-authenticate", "").lower().startswith("bearer"), (method, path)
        for key in (KEY, OTHER_KEY):
            status = await request(keyed_client, method, path, {"Authorization": f"Bearer {key}"})
            assert status != 401, (method, path, "a valid key was refused")
    return checked


async def test_public_routes_need_no_key(keyed_app: FastAPI, keyed_client: httpx.AsyncClient) -> None:
    public = [(m, p) for m, p in endpoints(keyed_app) if is_public(p) and m == "GET"]
    assert ("GET", "/health") in public
    for method, path in public:
        if "{" in path:
            continue
        status = await request(keyed_client, method, path, {})
        assert status != 401, (method, path)


async def test_without_api_keys_everything_is_open(client: httpx.AsyncClient) -> None:
    assert (await client.get("/documents")).status_code == 200
    assert (await client.post("/search", json={"question": "oil"})).status_code == 200


async def test_anonymous_upload_is_refused_before_its_body_is_read(keyed_client: httpx.AsyncClient) -> None:
    pulled = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal pulled
        for _ in range(100):
            pulled += 1
            yield b"a" * 65536

    response = await keyed_client.post(
        "/ingest/file", content=body(), headers={"Content-Type": "multipart/form-data; boundary=b"}
    )
    assert response.status_code == 401
    assert pulled <= 1, f"the service read {pulled} chunks of an anonymous body"


# --- CORS --------------------------------------------------------------------------------------
PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}


async def test_cors_is_closed_by_default(client: httpx.AsyncClient) -> None:
    preflight = await client.options("/search", headers={"Origin": "https://app.example", **PREFLIGHT})
    assert "access-control-allow-origin" not in preflight.headers
    simple = await client.get("/documents", headers={"Origin": "https://app.example"})
    assert simple.status_code == 200
    assert "access-control-allow-origin" not in simple.headers


@pytest.fixture
async def cors_client(tmp_path, embedding_backend) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(tmp_path, cors_origins="https://app.example,https://admin.example", api_keys=KEY)
    container = await open_container(settings, embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        yield client
    await close_container(container)


async def test_cors_allows_configured_origins_only(cors_client: httpx.AsyncClient) -> None:
    allowed = await cors_client.options("/search", headers={"Origin": "https://app.example", **PREFLIGHT})
    assert allowed.status_code == 200, "preflight needs no API key"
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in allowed.headers["access-control-allow-methods"]
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()

    patch = {**PREFLIGHT, "Access-Control-Request-Method": "PATCH"}  # the UI edits documents with PATCH
    assert (await cors_client.options("/documents/x", headers={"Origin": "https://app.example", **patch})).is_success

    refused = await cors_client.options("/search", headers={"Origin": "https://evil.example", **PREFLIGHT})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers

    lookalike = await cors_client.options(
        "/search", headers={"Origin": "https://app.example.evil.example", **PREFLIGHT}
    )
    assert "access-control-allow-origin" not in lookalike.headers

    actual = await cors_client.post(
        "/search",
        json={"question": "oil"},
        headers={"Origin": "https://admin.example", "Authorization": f"Bearer {KEY}"},
    )
    assert actual.status_code == 200
    assert actual.headers["access-control-allow-origin"] == "https://admin.example"

    unauthorised = await cors_client.post(
        "/search", json={"question": "oil"}, headers={"Origin": "https://app.example"}
    )
    assert unauthorised.status_code == 401
    assert unauthorised.headers["access-control-allow-origin"] == "https://app.example", "the browser can read the 401"

    foreign = await cors_client.get("/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in foreign.headers

"""Question, top_k and body limits on the query side: clear 4xx, checked before any work is done."""

from __future__ import annotations

import httpx
import pytest

from carrag.api.main import create_app
from tests.conftest import close_container, make_settings, open_container

QUESTION_ROUTES = ["/search", "/query", "/query/stream"]


@pytest.fixture(scope="module")
async def limited_client(tmp_path_factory, embedding_backend):
    settings = make_settings(tmp_path_factory.mktemp("limits"), max_question_chars=200, max_top_k=20)
    container = await open_container(settings, embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        await client.post(
            "/ingest/file", files={"file": ("tyres.txt", b"The cold tire pressure is 35 psi front and rear.")}
        )
        yield client
    await close_container(container)


@pytest.mark.parametrize("route", QUESTION_ROUTES)
async def test_question_over_max_question_chars_is_400_naming_the_setting(
    limited_client: httpx.AsyncClient, route: str
) -> None:
    response = await limited_client.post(route, json={"question": "pressure " * 30})
    assert response.status_code == 400, response.text
    assert "MAX_QUESTION_CHARS" in response.json()["detail"]
    ok = await limited_client.post(route, json={"question": "tire pressure"})
    assert ok.status_code == 200, "a question under the limit is answered"


@pytest.mark.parametrize("route", QUESTION_ROUTES)
async def test_top_k_over_max_top_k_is_400(limited_client: httpx.AsyncClient, route: str) -> None:
    response = await limited_client.post(route, json={"question": "tire pressure", "top_k": 21})
    assert response.status_code == 400
    assert "MAX_TOP_K" in response.json()["detail"]


async def test_max_top_k_above_a_hundred_is_honoured(tmp_path, embedding_backend) -> None:
    """The request schema once capped top_k at 100 whatever MAX_TOP_K said (422 for 150 with MAX_TOP_K=300)."""
    container = await open_container(make_settings(tmp_path, max_top_k=300), embedding_backend)
    app = create_app(container=container)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
            for route in ("/search", "/query"):
                response = await client.post(route, json={"question": "tire pressure", "top_k": 150})
                assert response.status_code == 200, response.text[:300]
            over = await client.post("/search", json={"question": "tire pressure", "top_k": 301})
            assert over.status_code == 400 and "MAX_TOP_K" in over.json()["detail"]
    finally:
        await close_container(container)


@pytest.mark.parametrize("route", QUESTION_ROUTES)
@pytest.mark.parametrize(
    "body",
    [
        {"question": ""},
        {"question": "   \n\t "},
        {"question": None},
        {"question": 42},
        {"question": ["oil"]},
        {},
        {"question": "x" * 20_001},
        {"question": "oil", "top_k": 0},
        {"question": "oil", "top_k": -5},
        {"question": "oil", "top_k": 1001},  # past the largest MAX_TOP_K there can be
        {"question": "oil", "top_k": 10**30},
        {"question": "oil", "top_k": 2.5},
        {"question": "oil", "top_k": "many"},
        {"question": "oil", "tags": "not-a-list"},
        {"question": "oil", "tags": ["x"] * 51},
        {"question": "oil", "rerank": "perhaps"},
    ],
    ids=lambda body: str(body)[:40],
)
async def test_invalid_question_bodies_are_422(limited_client: httpx.AsyncClient, route: str, body: dict) -> None:
    response = await limited_client.post(route, json=body)
    assert response.status_code == 422, response.text[:300]
    assert "detail" in response.json()


@pytest.mark.parametrize("route", QUESTION_ROUTES)
@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"", "application/json"),
        (b'"just a string"', "application/json"),
        (b"\xff\xfe\x00garbage", "application/json"),
        (b"question=oil", "application/x-www-form-urlencoded"),
        (b'{"question": "oil"}', "text/plain"),
        (b"[" * 100_000, "application/json"),
    ],
    ids=["broken", "empty", "string", "binary", "form", "text-plain", "deep"],
)
async def test_malformed_json_bodies_are_4xx(
    limited_client: httpx.AsyncClient, route: str, raw: bytes, content_type: str
) -> None:
    response = await limited_client.post(route, content=raw, headers={"Content-Type": content_type})
    assert 400 <= response.status_code < 500, response.text[:300]
    assert (await limited_client.get("/health")).status_code == 200


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/documents?offset=-1", 422),
        ("/documents?limit=0", 422),
        ("/documents?limit=100000", 422),
        ("/documents?offset=abc", 422),
        ("/documents/does-not-exist", 404),
        ("/documents/does-not-exist/chunks", 404),
        ("/documents/%00%ff/chunks", 404),
        ("/documents/" + "x" * 5000, 404),
    ],
)
async def test_document_routes_reject_bad_parameters(limited_client: httpx.AsyncClient, path: str, status: int) -> None:
    response = await limited_client.get(path)
    assert response.status_code == status, response.text[:300]
    assert "detail" in response.json()

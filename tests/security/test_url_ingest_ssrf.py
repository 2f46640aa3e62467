"""URL ingestion through the API cannot be turned against the host: refusals are 400s naming the
reason, fetch failures 502, oversized pages 413, and nothing is stored for any of them. Allowed
fetches go to a loopback site that the allow-list permits on purpose."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.container import Container
from carrag.services.fetchers.address_policy import system_resolver
from carrag.services.fetchers.http import HttpFetcher
from tests.conftest import close_container, make_settings, open_container
from tests.services.fetchers.fakes import FakeResolver
from tests.services.fetchers.loopback_site import LoopbackSite


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite() as running:
        yield running


@pytest.fixture
async def ssrf_client(tmp_path, embedding_backend) -> AsyncIterator[tuple[httpx.AsyncClient, Container]]:
    settings = make_settings(tmp_path, fetch_timeout=1.0, fetch_max_bytes=100_000)
    fetcher = HttpFetcher(
        timeout=settings.fetch_timeout,
        max_bytes=settings.fetch_max_bytes,
        per_host_delay=0,
        allowed_hosts=["public.example"],
        resolver=FakeResolver({"public.example": ["127.0.0.1"], "internal.example": ["10.0.0.8"]}, system_resolver),
    )
    container = await open_container(settings, embedding_backend, fetcher=fetcher)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        yield client, container
    await close_container(container)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/iam/security-credentials/", "metadata"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),
        ("http://127.0.0.1:8000/documents", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f000001/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://[::]/", "unspecified"),
        ("http://0.0.0.0:8000/", "unspecified"),
        ("http://internal.example/admin", "private"),
        ("http://192.168.1.1/", "private"),
        ("file:///etc/passwd", "http and https"),
        ("gopher://127.0.0.1:25/", "http and https"),
    ],
)
async def test_refused_urls_are_400_and_store_nothing(ssrf_client, url: str, reason: str) -> None:
    client, container = ssrf_client
    response = await client.post("/ingest/url", json={"url": url})
    assert response.status_code == 400, response.text
    assert reason in response.json()["detail"]
    assert (await container.store.list_documents(offset=0, limit=1)).total == 0


async def test_allow_listed_page_is_ingested(ssrf_client, site: LoopbackSite) -> None:
    client, _ = ssrf_client
    response = await client.post("/ingest/url", json={"url": site.url("/page", host="public.example")})
    assert response.status_code == 200, response.text
    assert response.json()["chunk_count"] >= 1
    assert site.requests == [("/page", f"public.example:{site.port}")]


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/redirect?to=http://127.0.0.1:{port}/page", 400, "loopback"),
        ("/redirect?to=http://169.254.169.254/latest/meta-data/", 400, "metadata"),
        ("/redirect?to=http://internal.example/", 400, "private"),
        ("/hop/0", 502, "redirected more than"),
        ("/endless", 413, "FETCH_MAX_BYTES"),
        ("/declared-huge", 413, "FETCH_MAX_BYTES"),
        ("/slow", 502, "longer than"),
        ("/binary", 400, "content type"),
        ("/image", 400, "content type"),
        ("/error", 502, "HTTP 500"),
    ],
)
async def test_hostile_sites_get_clear_errors(
    ssrf_client, site: LoopbackSite, path: str, status: int, message: str
) -> None:
    client, container = ssrf_client
    url = site.url(path.format(port=site.port), host="public.example")
    response = await client.post("/ingest/url", json={"url": url})
    assert response.status_code == status, response.text
    assert message in response.json()["detail"]
    assert (await container.store.list_documents(offset=0, limit=1)).total == 0
    assert (await client.get("/health")).status_code == 200

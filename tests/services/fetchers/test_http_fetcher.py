"""The SSRF-hardened fetcher.

Refusals of non-loopback ranges run without any connection: a fake resolver hands out the addresses
and the transport fails the test if it is ever asked to connect. Everything that does connect talks
to a real web server on loopback that the allow-list (``FETCH_ALLOWED_HOSTS``) lets through
deliberately; ``public.example`` is a name the fake resolver maps onto that server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from carrag.services.errors import FetchFailed, FetchRefused, PayloadTooLarge
from carrag.services.fetchers.address_policy import system_resolver
from carrag.services.fetchers.base import FetchOptions
from carrag.services.fetchers.http import HttpFetcher
from tests.services.fetchers.fakes import FakeResolver, NoConnections, RecordingTransport
from tests.services.fetchers.loopback_site import LoopbackSite
from tests.services.sync.site import Page, Site, html


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite() as running:
        yield running


def offline_fetcher(resolver=system_resolver, **options) -> tuple[HttpFetcher, NoConnections]:
    transport = NoConnections()
    options.setdefault("per_host_delay", 0)
    return HttpFetcher(resolver=resolver, transport=transport, **options), transport


PRIVATE_ANSWERS = {
    "rfc1918.example": ["10.0.0.7"],
    "home-router.example": ["192.168.0.1"],
    "metadata.example": ["169.254.169.254"],
    "alibaba-metadata.example": ["100.100.100.200"],
    "ula.example": ["fd00::5"],
    "link-local6.example": ["fe80::1"],
    "multicast.example": ["239.1.2.3"],
    "mapped.example": ["::ffff:192.168.1.1"],
    "nat64-metadata.example": ["64:ff9b::a9fe:a9fe"],
    "loopback.example": ["127.0.0.1"],
    "mixed.example": ["93.184.215.14", "10.0.0.1"],  # one private answer is enough to refuse
    "unspecified.example": ["0.0.0.0"],
}


@pytest.mark.parametrize("host", sorted(PRIVATE_ANSWERS))
async def test_names_resolving_to_refused_addresses_are_refused_without_connecting(host: str) -> None:
    fetcher, transport = offline_fetcher(FakeResolver(PRIVATE_ANSWERS))
    with pytest.raises(FetchRefused, match="FETCH_ALLOWED_HOSTS"):
        await fetcher.fetch(f"https://{host}/latest/meta-data/")
    assert transport.attempts == []
    await fetcher.aclose()


LOOPBACK_SPELLINGS = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://2130706433/",  # decimal
    "http://0x7f000001/",  # hex
    "http://017700000001/",  # octal
    "http://0x7f.0.0.1/",
    "http://localhost/",
    "http://LocalHost/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "https://10.0.0.1:8443/",
]


@pytest.mark.parametrize("url", LOOPBACK_SPELLINGS)
async def test_every_spelling_of_a_local_address_is_refused(url: str) -> None:
    """The real system resolver turns these spellings into addresses locally (no DNS query)."""
    fetcher, transport = offline_fetcher()
    with pytest.raises(FetchRefused):
        await fetcher.fetch(url)
    assert transport.attempts == []
    await fetcher.aclose()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "http and https"),
        ("gopher://example.org/", "http and https"),
        ("ftp://example.org/file.txt", "http and https"),
        ("javascript:alert(1)", "http and https"),
        ("//example.org/relative", "http and https"),
        ("http://", "no host"),
        ("http://user:secret@example.org/", "credentials"),
        ("http://exa mple.org/", "invalid host name"),
        ("http://exa%00mple.org/", "invalid host name"),
        ("http://[::1/", "Invalid URL"),
    ],
)
async def test_malformed_and_non_http_urls_are_refused(url: str, message: str) -> None:
    fetcher, transport = offline_fetcher(FakeResolver({"example.org": ["93.184.215.14"]}))
    with pytest.raises(FetchRefused, match=message):
        await fetcher.fetch(url)
    assert transport.attempts == []
    await fetcher.aclose()


async def test_unresolvable_host_is_a_fetch_failure() -> None:
    fetcher, transport = offline_fetcher(FakeResolver({}))
    with pytest.raises(FetchFailed, match="cannot resolve"):
        await fetcher.fetch("https://no-such-host.example/")
    assert transport.attempts == []
    await fetcher.aclose()


# --- against the loopback site -------------------------------------------------------------------
def site_fetcher(site: LoopbackSite, **options) -> tuple[HttpFetcher, RecordingTransport, FakeResolver]:
    # unknown names (numeric spellings, localhost) go to the real resolver, which answers locally
    resolver = FakeResolver({"public.example": ["127.0.0.1"], "other.example": ["127.0.0.1"]}, system_resolver)
    transport = RecordingTransport()
    options.setdefault("allowed_hosts", ["public.example"])
    options.setdefault("per_host_delay", 0)
    return HttpFetcher(resolver=resolver, transport=transport, **options), transport, resolver


async def test_allow_listed_host_is_fetched_at_the_checked_address_with_its_host_header(site: LoopbackSite) -> None:
    fetcher, transport, _ = site_fetcher(site)
    page = await fetcher.fetch(site.url("/echo-host", host="public.example"))
    assert page.body.decode() == f"public.example:{site.port}"
    assert page.content_type == "text/plain"
    assert transport.targets == [f"http://127.0.0.1:{site.port}/echo-host"]
    await fetcher.aclose()


async def test_allow_list_by_cidr(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site, allowed_hosts=["127.0.0.0/8"])
    assert (await fetcher.fetch(site.url("/text"))).body.startswith(b"Tire pressure")
    assert (await fetcher.fetch(site.url("/text", host="other.example"))).body.startswith(b"Tire pressure")
    await fetcher.aclose()


async def test_allow_list_entry_does_not_extend_to_other_names(site: LoopbackSite) -> None:
    fetcher, transport, _ = site_fetcher(site)
    with pytest.raises(FetchRefused, match="loopback"):
        await fetcher.fetch(site.url("/page", host="other.example"))
    with pytest.raises(FetchRefused, match="loopback"):
        await fetcher.fetch(site.url("/page"))  # 127.0.0.1 itself is not allowed by the name
    assert transport.targets == [] and site.requests == []
    await fetcher.aclose()


async def test_dns_rebinding_cannot_swap_the_address_after_the_check(site: LoopbackSite) -> None:
    """First answer allowed, every later answer private: the connection uses the first."""
    resolver = FakeResolver({"rebind.example": [["127.0.0.1"], ["10.0.0.1"]]})
    transport = RecordingTransport()
    fetcher = HttpFetcher(resolver=resolver, transport=transport, allowed_hosts=["127.0.0.1"], per_host_delay=0)
    page = await fetcher.fetch(site.url("/echo-host", host="rebind.example"))
    assert page.body.decode() == f"rebind.example:{site.port}"
    assert resolver.calls == ["rebind.example"], "resolved once per hop"
    assert transport.targets == [f"http://127.0.0.1:{site.port}/echo-host"]
    # the next fetch sees the private answer and is refused before connecting
    with pytest.raises(FetchRefused, match="private"):
        await fetcher.fetch(site.url("/echo-host", host="rebind.example"))
    assert len(transport.targets) == 1
    await fetcher.aclose()


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/page",
        "http://2130706433:{port}/page",
        "http://0x7f000001:{port}/page",
        "http://[::1]:{port}/page",
        "http://localhost:{port}/page",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
    ],
)
async def test_redirects_are_checked_like_the_first_request(site: LoopbackSite, target: str) -> None:
    fetcher, transport, _ = site_fetcher(site)
    location = target.format(port=site.port)
    with pytest.raises(FetchRefused):
        await fetcher.fetch(site.url(f"/redirect?to={location}", host="public.example"))
    assert len(transport.targets) == 1, "only the first hop connected"
    assert [path for path, _ in site.requests] == ["/redirect"]
    await fetcher.aclose()


async def test_allowed_redirect_is_followed_and_reported(site: LoopbackSite) -> None:
    fetcher, transport, _ = site_fetcher(site)
    start = site.url(f"/redirect?status=301&to={site.url('/page', host='public.example')}", host="public.example")
    page = await fetcher.fetch(start)
    assert page.final_url == site.url("/page", host="public.example")
    assert page.url == start and b"Oil change" in page.body
    assert len(transport.targets) == 2
    await fetcher.aclose()


async def test_redirect_chain_is_capped(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site, max_redirects=3)
    with pytest.raises(FetchFailed, match="more than 3"):
        await fetcher.fetch(site.url("/hop/0", host="public.example"))
    assert [path for path, _ in site.requests] == ["/hop/0", "/hop/1", "/hop/2", "/hop/3"]
    await fetcher.aclose()


async def test_endless_body_is_cut_at_the_size_cap(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site, max_bytes=200_000)
    with pytest.raises(PayloadTooLarge, match="200000"):
        await fetcher.fetch(site.url("/endless", host="public.example"))
    await fetcher.aclose()


async def test_declared_oversize_body_is_refused_before_reading(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site, max_bytes=10_000)
    with pytest.raises(PayloadTooLarge, match="1000000000000 bytes"):
        await fetcher.fetch(site.url("/declared-huge", host="public.example"))
    await fetcher.aclose()


async def test_slow_body_is_cut_at_the_time_cap(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site, timeout=1.0)
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="longer than 1s"):
        await fetcher.fetch(site.url("/slow", host="public.example"))
    assert time.monotonic() - started < 3.0
    await fetcher.aclose()


@pytest.mark.parametrize("path", ["/gzip-page", "/deflate-page"])
async def test_compressed_pages_are_decoded(site: LoopbackSite, path: str) -> None:
    fetcher, _, _ = site_fetcher(site)
    page = await fetcher.fetch(site.url(path, host="public.example"))
    assert page.body.startswith(b"<html>") and b"Oil change" in page.body
    await fetcher.aclose()


async def test_compression_bomb_is_cut_at_the_size_cap_as_decompressed(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site, max_bytes=1_000_000)
    with pytest.raises(PayloadTooLarge, match="1000000"):
        await fetcher.fetch(site.url("/gzip-bomb", host="public.example"))
    await fetcher.aclose()


@pytest.mark.parametrize("path", ["/double-gzip", "/brotli"])
async def test_stacked_or_unknown_content_codings_are_refused(site: LoopbackSite, path: str) -> None:
    fetcher, _, _ = site_fetcher(site)
    with pytest.raises(FetchRefused, match="content coding"):
        await fetcher.fetch(site.url(path, host="public.example"))
    await fetcher.aclose()


@pytest.mark.parametrize("path", ["/binary", "/image", "/no-content-type"])
async def test_non_text_content_types_are_refused(site: LoopbackSite, path: str) -> None:
    fetcher, _, _ = site_fetcher(site)
    with pytest.raises(FetchRefused, match="content type"):
        await fetcher.fetch(site.url(path, host="public.example"))
    await fetcher.aclose()


async def test_http_errors_are_fetch_failures(site: LoopbackSite) -> None:
    fetcher, _, _ = site_fetcher(site)
    with pytest.raises(FetchFailed, match="HTTP 500"):
        await fetcher.fetch(site.url("/error", host="public.example"))
    await fetcher.aclose()


async def test_connections_are_not_reused_across_requests(site: LoopbackSite) -> None:
    """A kept-alive connection is keyed by IP and port only; reusing it for another host name would
    skip that name's TLS check. Each request therefore opens its own connection."""
    resolver = FakeResolver({"public.example": ["127.0.0.1"], "other.example": ["127.0.0.1"]})
    fetcher = HttpFetcher(resolver=resolver, allowed_hosts=["public.example", "other.example"], per_host_delay=0)
    await fetcher.fetch(site.url("/text", host="public.example"))
    await fetcher.fetch(site.url("/text", host="other.example"))
    await fetcher.fetch(site.url("/text", host="public.example"))
    assert len(set(site.client_ports)) == 3, "a new connection per request"
    await fetcher.aclose()


async def test_ipv6_loopback_site_with_bracketed_host_header() -> None:
    with LoopbackSite("::1") as site6:
        fetcher = HttpFetcher(allowed_hosts=["::1"], per_host_delay=0)
        page = await fetcher.fetch(site6.url("/echo-host"))
        assert page.body.decode() == f"[::1]:{site6.port}"
        await fetcher.aclose()


async def test_a_crawls_options_validators_redirects_and_media_types() -> None:
    """What a crawl asks of the fetcher (`FetchOptions`): a conditional fetch answered 304, the status of a
    page that is gone, a redirect it refuses to follow, a media type it accepts instead of the usual ones."""
    with Site() as site:
        site.pages["/a.html"] = html("A", "The first page.")
        site.pages["/robots.txt"] = Page(b"User-agent: *\nDisallow:\n", "text/x-robots")
        site.redirects["/moved.html"] = "http://127.0.0.2:9/elsewhere.html"
        fetcher = HttpFetcher(allowed_hosts=["127.0.0.0/8"], per_host_delay=0)
        try:
            page = await fetcher.fetch(site.url("/a.html"))
            assert page.status == 200 and page.etag == site.pages["/a.html"].etag and page.body
            again = await fetcher.fetch(site.url("/a.html"), FetchOptions(etag=page.etag))
            assert again.not_modified and again.body == b"" and again.etag == page.etag
            assert site.requests[-1].if_none_match == page.etag
            with pytest.raises(FetchFailed) as gone:
                await fetcher.fetch(site.url("/missing.html"))
            assert gone.value.status == 404 and gone.value.gone
            with pytest.raises(FetchRefused, match="outside the crawl; not followed"):
                await fetcher.fetch(site.url("/moved.html"), FetchOptions(follow=lambda url: "127.0.0.1" in url))
            with pytest.raises(FetchRefused, match="content type text/x-robots"):
                await fetcher.fetch(site.url("/robots.txt"))
            robots = await fetcher.fetch(
                site.url("/robots.txt"), FetchOptions(media_types=frozenset({"text/x-robots"}))
            )
            assert robots.text().startswith("User-agent")
        finally:
            await fetcher.aclose()

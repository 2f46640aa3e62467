"""Site crawl (`carrag/services/sync/crawl.py`) against a site the test serves on loopback and changes
between runs: pages added, changed and removed, a sitemap, robots.txt disallowing a path, a redirect to
another host that is not followed; on both stores, with exact counts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from carrag.services.container import Container
from carrag.services.sync.crawl import CrawlLimits
from tests.services.sync.helpers import counts, finished, outcomes
from tests.services.sync.site import Site, html


@pytest.fixture
def other_host() -> Iterator[Site]:
    """Another host (127.0.0.2) the site redirects to: a crawl must never reach it."""
    with Site(host="127.0.0.2") as site:
        site.pages["/elsewhere.html"] = html("Elsewhere", "A page on another host.")
        yield site


@pytest.fixture
def site(other_host: Site) -> Iterator[Site]:
    with Site() as site:
        site.robots = f"User-agent: *\nDisallow: /docs/private/\n\nSitemap: {site.url('/sitemap.xml')}\n"
        site.sitemap = ["/docs/orphan.html", "/other/outside.html"]
        site.pages.update(
            {
                "/docs/index.html": html(
                    "Fleet handbook",
                    "The fleet handbook covers brakes, tyres and cooling.",
                    "brakes.html",
                    "tyres.html#pressure",
                    "private/salaries.html",
                    "away.html",
                    "../other/outside.html",
                    "mailto:fleet@example.com",
                ),
                "/docs/brakes.html": html(
                    "Brakes", "Replace the brake fluid every two years.", "tyres.html", "cooling.html"
                ),
                "/docs/tyres.html": html("Tyres", "Keep the tyre pressure at 2.4 bar on the front axle."),
                "/docs/cooling.html": html("Cooling", "Change the coolant every five years or 150,000 km."),
                "/docs/orphan.html": html("Wipers", "Wiper blades are replaced every autumn."),
                "/docs/private/salaries.html": html("Salaries", "Not for the crawler."),
                "/other/outside.html": html("Outside", "Outside the crawl's prefix."),
            }
        )
        site.redirects["/docs/away.html"] = other_host.url("/elsewhere.html")
        yield site


async def crawl(container: Container, url: str, **limits: object):
    settings = {"max_pages": 50, "max_depth": 3, **limits}
    job = await container.sync.crawl(url, container.requests.ingest(), CrawlLimits(**settings))  # type: ignore[arg-type]
    return await finished(container.jobs, job)


async def test_a_site_followed_through_its_changes(store_container: Container, site: Site, other_host: Site) -> None:
    container = store_container
    start = site.url("/docs/index.html")
    first = await crawl(container, start)
    assert first.state == "done", first.error
    assert counts(first.report) == {"added": 5, "skipped": 2}
    assert outcomes(first.report) == {
        site.url("/docs/index.html"): "added",
        site.url("/docs/brakes.html"): "added",
        site.url("/docs/tyres.html"): "added",
        site.url("/docs/cooling.html"): "added",
        site.url("/docs/orphan.html"): "added",  # only in the sitemap
        site.url("/docs/private/salaries.html"): "skipped",  # robots.txt
        site.url("/docs/away.html"): "skipped",  # redirects to another host
    }
    assert other_host.requests == [], "the redirect to another host was not followed"
    assert "/docs/private/salaries.html" not in site.paths_requested()
    assert "/other/outside.html" not in site.paths_requested(), "outside the prefix (linked and in the sitemap)"
    assert first.report.root == site.url("/docs/")

    site.requests.clear()
    second = await crawl(container, start)
    assert counts(second.report) == {"unchanged": 5, "skipped": 2}
    page_requests = [r for r in site.requests if r.path.endswith(".html") and r.path != "/docs/away.html"]
    assert all(r.if_none_match == site.pages[r.path].etag for r in page_requests), "validators sent back"
    assert len(page_requests) == 5

    site.change("/docs/tyres.html", html("Tyres", "Keep the tyre pressure at 2.6 bar on the front axle."))
    del site.pages["/docs/cooling.html"]  # still linked from brakes.html: answers 404
    site.sitemap = []  # orphan.html is still served, but nothing leads to it any more
    site.change(
        "/docs/index.html",
        html(
            "Fleet handbook",
            "The fleet handbook covers brakes, tyres and batteries.",
            "brakes.html",
            "tyres.html",
            "battery.html",
        ),
    )
    site.pages["/docs/battery.html"] = html("Battery", "Test the battery before every winter.")
    third = await crawl(container, start)
    assert counts(third.report) == {"added": 1, "updated": 2, "deleted": 2, "unchanged": 1}
    assert outcomes(third.report) == {
        site.url("/docs/index.html"): "updated",
        site.url("/docs/tyres.html"): "updated",
        site.url("/docs/battery.html"): "added",
        site.url("/docs/cooling.html"): "deleted",  # 404
        site.url("/docs/orphan.html"): "deleted",  # no longer reached
    }
    stored = sorted(d.source_id for d in (await container.store.list_documents(offset=0, limit=20)).items)
    assert stored == sorted(site.url(f"/docs/{name}.html") for name in ("index", "brakes", "tyres", "battery"))


async def test_a_crawl_cut_short_by_max_pages_deletes_nothing_it_did_not_reach(
    store_container: Container, site: Site
) -> None:
    container = store_container
    start = site.url("/docs/index.html")
    assert counts((await crawl(container, start)).report) == {"added": 5, "skipped": 2}
    short = await crawl(container, start, max_pages=2)
    assert counts(short.report) == {"unchanged": 2}
    assert short.report.note is not None and "max_pages (2)" in short.report.note
    assert (await container.store.list_documents(offset=0, limit=20)).total == 5


@pytest.mark.parametrize("status", [403, 503])
async def test_a_robots_txt_that_cannot_be_read_stops_the_crawl_before_any_change(
    store_container: Container, site: Site, status: int
) -> None:
    container = store_container
    start = site.url("/docs/index.html")
    await crawl(container, start)
    site.robots_status = status
    site.sitemap = []
    job = await crawl(container, start)
    assert job.state == "failed" and "robots.txt could not be read" in (job.error or "")
    assert (await container.store.list_documents(offset=0, limit=20)).total == 5, "nothing deleted on a guess"


async def test_a_site_the_address_policy_refuses_is_not_crawled(container: Container, site: Site) -> None:
    job = await crawl(container, site.url("/docs/index.html"))  # FETCH_ALLOWED_HOSTS left empty
    assert job.state == "failed" and "FETCH_ALLOWED_HOSTS" in (job.error or "")
    assert site.requests == [] and (await container.store.list_documents(offset=0, limit=20)).total == 0


async def test_robots_txt_for_carrag_and_its_absence(store_container: Container, site: Site) -> None:
    site.robots = "User-agent: Carrag\nDisallow: /docs/brakes.html\n\nUser-agent: *\nDisallow: /\n"
    report = (await crawl(store_container, site.url("/docs/index.html"))).report
    assert outcomes(report)[site.url("/docs/brakes.html")] == "skipped", "the rules for Carrag's user agent"
    assert outcomes(report)[site.url("/docs/private/salaries.html")] == "added", "not the rules for others"
    assert counts(report) == {"added": 4, "skipped": 2}
    site.robots = None  # no robots.txt (404): everything is allowed
    report = (await crawl(store_container, site.url("/docs/index.html"))).report
    assert counts(report) == {"added": 2, "unchanged": 4, "skipped": 1}
    assert {url for url, outcome in outcomes(report).items() if outcome == "added"} == {
        site.url("/docs/brakes.html"),
        site.url("/docs/cooling.html"),
    }

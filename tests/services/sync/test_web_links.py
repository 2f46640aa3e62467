"""What a crawl reads from the web (carrag/services/sync/web_links.py): URLs compared alike, the scope it
stays in, a page's links, a sitemap's entries (without expanding entities)."""

from __future__ import annotations

import pytest

from carrag.services.errors import InvalidInput
from carrag.services.sync.web_links import CrawlScope, normalise, page_links, sitemap_entries


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Docs.Example.COM:80/guide/#intro", "http://docs.example.com/guide/"),
        ("https://docs.example.com:443", "https://docs.example.com/"),
        ("https://docs.example.com:8443/a?b=1#c", "https://docs.example.com:8443/a?b=1"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("mailto:fleet@example.com", None),
        ("ftp://example.com/file", None),
        ("https://user:secret@example.com/", None),
        ("http://example.com:99999/", None),
    ],
)
def test_urls_are_normalised_or_refused(url: str, expected: str | None) -> None:
    assert normalise(url) == expected


def test_the_scope_is_the_start_urls_directory_or_its_site() -> None:
    scope = CrawlScope.of("https://docs.example.com/guide/intro.html")
    assert scope.prefix == "https://docs.example.com/guide/"
    assert "https://docs.example.com/guide/brakes/pads.html" in scope
    assert "https://docs.example.com/guide-old/" not in scope and "https://other.example.com/guide/" not in scope
    assert scope.follows("HTTPS://docs.example.com/guide/x#y") and not scope.follows("https://docs.example.com/")
    assert CrawlScope.of("https://docs.example.com/guide/intro.html", same_prefix=False).prefix == (
        "https://docs.example.com/"
    )
    with pytest.raises(InvalidInput):
        CrawlScope.of("file:///etc/passwd")


def test_page_links_resolve_against_the_base_and_come_once() -> None:
    body = (
        b'<html><head><base href="https://docs.example.com/guide/"></head><body>'
        b'<a href="brakes.html">Brakes</a> <a href="brakes.html#pads">Pads</a> <a href="/other.html">x</a>'
        b'<a href="mailto:a@b.c">mail</a> <a>no target</a> <a href="https://elsewhere.example/">y</a></body></html>'
    )
    assert page_links(body, "https://docs.example.com/index.html") == [
        "https://docs.example.com/guide/brakes.html",
        "https://docs.example.com/other.html",
        "https://elsewhere.example/",
    ]
    assert page_links(b"", "https://docs.example.com/") == []


def test_sitemaps_and_sitemap_indexes_without_entity_expansion() -> None:
    urlset = (
        b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc> https://docs.example.com/a.html </loc></url><url><loc>https://docs.example.com/b.html</loc></url>"
        b"</urlset>"
    )
    assert sitemap_entries(urlset) == (["https://docs.example.com/a.html", "https://docs.example.com/b.html"], [])
    index = b"<sitemapindex><sitemap><loc>https://docs.example.com/s1.xml</loc></sitemap></sitemapindex>"
    assert sitemap_entries(index) == ([], ["https://docs.example.com/s1.xml"])
    hostile = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY file SYSTEM "file:///etc/passwd">'
        b'<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b"<urlset><url><loc>https://x.example/&file;&b;</loc></url></urlset>"
    )
    pages, _ = sitemap_entries(hostile)
    assert all("root:" not in page and "aaaaaaaaaa" not in page for page in pages)
    assert sitemap_entries(b"not xml at all") == ([], [])

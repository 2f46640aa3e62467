"""The web side of a crawl: URLs as a crawl compares them, the part of a site it stays in, a page's
links and a sitemap's pages."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

import lxml.html
from lxml import etree

from carrag.services.errors import InvalidInput

DEFAULT_PORTS = {"http": 80, "https": 443}


def normalise(url: str) -> str | None:
    """``url`` as a crawl compares it: http(s) only, scheme and host in lower case, no default port, no
    fragment, an empty path as ``/``; None for anything else (mailto:, credentials, a broken port)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a normalised URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True, slots=True)
class CrawlScope:
    """Where a crawl goes: URLs that start with ``prefix`` (the start URL's directory, or its whole site)."""

    start: str
    prefix: str

    @classmethod
    def of(cls, url: str, same_prefix: bool = True) -> CrawlScope:
        start = normalise(url)
        if start is None:
            raise InvalidInput(f"{url!r} is not an http or https URL a crawl can start from.")
        if not same_prefix:
            return cls(start, origin(start) + "/")
        path = urlsplit(start).path
        return cls(start, origin(start) + path[: path.rfind("/") + 1])

    def __contains__(self, url: str) -> bool:
        return url.startswith(self.prefix)

    def follows(self, url: str) -> bool:
        """Whether a redirect to ``url`` stays in the crawl."""
        normalised = normalise(url)
        return normalised is not None and normalised in self


def page_links(body: bytes, base_url: str) -> list[str]:
    """The targets of a page's ``<a href>`` links, normalised, each once, in page order (blocking)."""
    try:
        document = lxml.html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return []
    base = document.find(".//base[@href]")
    if base is not None:
        base_url = urljoin(base_url, base.get("href", "").strip())
    links = (normalise(urljoin(base_url, href.strip())) for href in document.xpath("//a/@href"))
    return list(dict.fromkeys(link for link in links if link is not None))


def sitemap_entries(body: bytes) -> tuple[list[str], list[str]]:
    """(pages, nested sitemaps) a sitemap lists: ``<urlset>`` gives pages, ``<sitemapindex>`` sitemaps.
    Entities are not expanded and nothing is loaded from the network (blocking)."""
    try:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
        root = etree.fromstring(body, parser)
    except etree.XMLSyntaxError:
        return [], []
    locations = [loc.text.strip() for loc in root.iter("{*}loc") if loc.text and loc.text.strip()]
    if etree.QName(root).localname == "sitemapindex":
        return [], locations
    return locations, []

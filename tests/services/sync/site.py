"""A small web site on loopback that a crawl test changes between runs: pages with ETags (answering 304
to a matching If-None-Match), redirects, robots.txt and a sitemap. It records every request."""

from __future__ import annotations

import socket
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    version: int = 1

    @property
    def etag(self) -> str:
        return f'"v{self.version}-{len(self.body)}"'


def html(title: str, text: str, *links: str) -> Page:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return Page(
        f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1><p>{text}</p>"
        f"<ul>{anchors}</ul></article></body></html>".encode()
    )


@dataclass
class Request:
    path: str
    if_none_match: str | None


@dataclass
class Site:
    host: str = "127.0.0.1"
    pages: dict[str, Page] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    robots: str | None = None
    robots_status: int = 200
    sitemap: list[str] | None = None  # paths (made absolute) listed in /sitemap.xml
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        site = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            address_family = socket.AF_INET

            def handle_error(self, request: object, client_address: object) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                site.requests.append(Request(path, self.headers.get("If-None-Match")))
                page = site.pages.get(path)
                if path == "/robots.txt" and site.robots is not None:
                    self._send(site.robots_status, site.robots.encode(), {"Content-Type": "text/plain"})
                elif path == "/sitemap.xml" and site.sitemap is not None:
                    self._send(200, site.sitemap_xml(), {"Content-Type": "application/xml"})
                elif path in site.redirects:
                    self._send(302, headers={"Location": site.redirects[path]})
                elif page is None:
                    self._send(404, b"not found", {"Content-Type": "text/plain"})
                elif self.headers.get("If-None-Match") == page.etag:
                    self._send(304, headers={"ETag": page.etag})
                else:
                    self._send(200, page.body, {"Content-Type": page.content_type, "ETag": page.etag})

        self._server = Server((self.host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self._server.server_address[1]}{path}"

    def sitemap_xml(self) -> bytes:
        entries = "".join(f"<url><loc>{self.url(path)}</loc></url>" for path in self.sitemap or [])
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
        ).encode()

    def change(self, path: str, page: Page) -> None:
        page.version = self.pages[path].version + 1 if path in self.pages else 1
        self.pages[path] = page

    def paths_requested(self) -> list[str]:
        return [request.path for request in self.requests]

    def __enter__(self) -> Site:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

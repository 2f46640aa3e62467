"""A small real web site on loopback (127.0.0.1 or ::1) for fetcher tests: pages, redirects, big
and slow bodies, odd content types. It records the path and Host header of every request."""

from __future__ import annotations

import functools
import gzip
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGE = (
    b"<html><head><title>Oil change intervals</title></head><body><article><h1>Oil change intervals</h1>"
    b"<p>Change the engine oil of the F-150 every 7,500 miles or six months, whichever comes first. "
    b"Use Motorcraft SAE 5W-30 full synthetic oil and replace the oil filter at every change.</p>"
    b"<p>Check the level at every refuelling stop; top up when the dipstick reads below the lower hole.</p>"
    b"</article></body></html>"
)

ODD_CHARSET_PAGE = (
    "<html><head><title>Öl und Reifen</title></head><body><article><h1>Ölwechsel</h1>"
    "<p>Wechseln Sie das Motoröl alle 15.000 km oder einmal im Jahr, je nachdem, was zuerst eintritt. "
    "Verwenden Sie vollsynthetisches Öl der Viskosität 5W-30 und einen neuen Ölfilter bei jedem Wechsel.</p>"
    "<p>Prüfen Sie den Ölstand bei jedem Tankstopp; füllen Sie nach, wenn der Messstab unter der Markierung liegt.</p>"
    "</article></body></html>"
).encode()
RTF_NOTES = rb"{\rtf1\ansi\ansicpg1252 {\pard Brake fluid: replace every two years (DOT 4).\par}}"


@functools.cache
def gzip_bomb() -> bytes:
    """100 MB of zeros in ~100 KB."""
    return gzip.compress(bytes(100 * 1024 * 1024), compresslevel=9)


class LoopbackSite:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.requests: list[tuple[str, str | None]] = []  # (path, Host header)
        self.client_ports: list[int] = []  # one per request: equal ports mean a reused connection
        self.stop = threading.Event()
        site = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

            def handle_error(self, request: object, client_address: object) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):  # a fetcher hanging up is expected
                    super().handle_error(request, client_address)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self,
                status: int,
                body: bytes,
                content_type: str | None = "text/html; charset=utf-8",
                extra: dict[str, str] | None = None,
            ) -> None:
                self.send_response(status)
                if content_type is not None:
                    self.send_header("Content-Type", content_type)
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                site.requests.append((parts.path, self.headers.get("Host")))
                site.client_ports.append(self.client_address[1])
                try:
                    self._route(parts.path, query)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the fetcher hung up (size or time cap): expected

            def _route(self, path: str, query: dict[str, str]) -> None:
                if path == "/page":
                    self._send(200, PAGE)
                elif path == "/utf8mb4-page":  # a charset name from MySQL that Python does not know
                    self._send(200, ODD_CHARSET_PAGE, "text/html; charset=utf8mb4")
                elif path == "/mislabelled-text":  # declared UTF-8, sent as Windows-1252
                    self._send(200, "Crème brûlée, 5 °C.\n".encode("cp1252"), "text/plain; charset=utf-8")
                elif path == "/bogus-charset-text":
                    self._send(200, "Température de l’huile : 90 °C.\n".encode("cp1252"), "text/plain; charset=x-bogus")
                elif path in ("/notes.rtf", "/download"):  # a document format, by its media type
                    self._send(200, RTF_NOTES, "application/rtf" if path == "/notes.rtf" else "text/rtf")
                elif path == "/text":
                    self._send(200, b"Tire pressure: 35 psi front and rear.\n", "text/plain")
                elif path == "/echo-host":
                    self._send(200, (self.headers.get("Host") or "").encode(), "text/plain")
                elif path == "/redirect":
                    self._send(int(query.get("status", "302")), b"", extra={"Location": query["to"]})
                elif path.startswith("/hop/"):
                    self._send(302, b"", extra={"Location": f"/hop/{int(path.rsplit('/', 1)[1]) + 1}"})
                elif path == "/binary":
                    self._send(200, bytes(range(256)) * 4, "application/octet-stream")
                elif path == "/image":
                    self._send(200, b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
                elif path == "/no-content-type":
                    self._send(200, b"no type", None)
                elif path == "/declared-huge":
                    # Announces a huge body, then sends a little: the fetcher must refuse on the header.
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(10**12))
                    self.end_headers()
                    self.wfile.write(b"x" * 1024)
                elif path == "/endless":
                    self._stream(chunk=b"a" * 65536, pause=0.0, limit_seconds=30)
                elif path == "/slow":
                    self._stream(chunk=b"a", pause=0.2, limit_seconds=30)
                elif path == "/gzip-page":
                    self._send(200, gzip.compress(PAGE), extra={"Content-Encoding": "gzip"})
                elif path == "/deflate-page":
                    self._send(200, zlib.compress(PAGE), extra={"Content-Encoding": "deflate"})
                elif path == "/gzip-bomb":
                    self._send(200, gzip_bomb(), "text/plain", extra={"Content-Encoding": "gzip"})
                elif path == "/double-gzip":
                    self._send(200, gzip.compress(gzip.compress(PAGE)), extra={"Content-Encoding": "gzip, gzip"})
                elif path == "/brotli":
                    self._send(200, b"\x1b\x00\x00", extra={"Content-Encoding": "br"})
                elif path == "/error":
                    self._send(500, b"boom", "text/plain")
                else:
                    self._send(404, b"not found", "text/plain")

            def _stream(self, *, chunk: bytes, pause: float, limit_seconds: float) -> None:
                """A chunked text body that goes on until the client leaves (bounded in time)."""
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                deadline = time.monotonic() + limit_seconds
                while not site.stop.is_set() and time.monotonic() < deadline:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                    if pause:
                        time.sleep(pause)
                self.wfile.write(b"0\r\n\r\n")

        self._server = Server((host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str, host: str | None = None) -> str:
        bound = self._server.server_address[0]
        host = host or (f"[{bound}]" if ":" in bound else bound)
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> LoopbackSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._server.shutdown()
        self._server.server_close()

"""A real HTTP server on 127.0.0.1 that answers like Ollama with the recorded responses in
fixtures/ollama (byte for byte), and remembers the requests it got."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).parent / "fixtures" / "ollama"
MISSING_MODEL = "no-such-model"


def _recorded_error(name: str) -> tuple[int, bytes]:
    """The recordings hold the body, then the HTTP status on the last line."""
    lines = (RECORDINGS / name).read_text().strip().splitlines()
    return int(lines[-1]), "\n".join(lines[:-1]).encode()


class RecordedOllamaHandler(BaseHTTPRequestHandler):
    """HTTP plumbing shared by the Ollama stand-ins: JSON and chunked NDJSON answers, the recorded
    GET endpoints, and the request's JSON body."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, lines: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in lines:
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _send_recorded_get(self) -> None:
        files = {"/api/version": "version.json", "/api/tags": "tags.json"}
        if self.path in files:
            self._send(200, (RECORDINGS / files[self.path]).read_bytes())
        else:
            self._send(404, b"404 page not found", "text/plain")

    def _json_body(self) -> Any:
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"{}")


class OllamaReplay:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.fail_next: int = 0  # answer this many requests with a 500 first
        replay = self

        class Handler(RecordedOllamaHandler):
            def do_GET(self) -> None:
                replay.requests.append(("GET", self.path, None))
                self._send_recorded_get()

            def do_POST(self) -> None:
                payload = self._json_body()
                replay.requests.append(("POST", self.path, payload))
                if replay.fail_next > 0:
                    replay.fail_next -= 1
                    self._send(500, b'{"error":"server overloaded"}')
                    return
                model = payload.get("model")
                if self.path == "/api/embed":
                    if model == MISSING_MODEL:
                        self._send(*_recorded_error("embed_model_missing.txt"))
                    else:
                        self._send(200, (RECORDINGS / "embed_batch.json").read_bytes())
                elif self.path == "/api/generate":
                    if model == MISSING_MODEL:
                        self._send(*_recorded_error("generate_model_missing.txt"))
                    elif payload.get("stream", True):
                        self._stream((RECORDINGS / "generate_stream.ndjson").read_bytes().splitlines(keepends=True))
                    else:
                        self._send(200, (RECORDINGS / "generate.json").read_bytes())
                elif self.path == "/api/chat":
                    if model == MISSING_MODEL:
                        self._send(*_recorded_error("generate_model_missing.txt"))
                    elif payload.get("format") is not None:
                        self._send(200, (RECORDINGS / "chat_format_tags.json").read_bytes())
                    else:
                        self._stream((RECORDINGS / "chat_stream.ndjson").read_bytes().splitlines(keepends=True))
                else:
                    self._send(404, b"404 page not found", "text/plain")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> OllamaReplay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

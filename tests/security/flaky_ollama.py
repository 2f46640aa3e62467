"""An Ollama stand-in on a fixed loopback port that can be down, hang, fail or work, switched while
the service under test keeps running — to show that outside failures become clear 503s and that the
service recovers by itself.

Working answers are the recorded Ollama responses in tests/fixtures/ollama: `/api/embed` returns
the recorded vectors (cycled, so any number of inputs gets as many vectors), `/api/chat` replays the
recorded stream, `/api/tags` the recorded model list (model ``smollm2``).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from tests.live_server import free_port
from tests.ollama_replay import RECORDINGS, RecordedOllamaHandler

Mode = Literal["ok", "error", "hang"]
MODEL = "smollm2"


class FlakyOllama:
    def __init__(self) -> None:
        self.port = free_port()
        self.mode: Mode = "ok"
        self.fail_next = 0  # answer this many model requests with a 500, then work
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._release = threading.Event()
        self._vectors = json.loads((RECORDINGS / "embed_batch.json").read_text())["embeddings"]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- switching -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._server is not None:
            return
        self._release.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server

    def stop(self) -> None:
        """Down: nothing listens on the port any more (connections are refused)."""
        self._release.set()  # let hanging handlers go
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FlakyOllama:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- answers -------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        flaky = self

        class Handler(RecordedOllamaHandler):
            def _misbehave(self) -> bool:
                if flaky.mode == "hang":
                    flaky._release.wait(60)  # never answers while the test looks
                    return True
                if flaky.mode == "error" or flaky.fail_next > 0:
                    flaky.fail_next = max(0, flaky.fail_next - 1)
                    self._send(500, b'{"error":"server overloaded"}')
                    return True
                return False

            def do_GET(self) -> None:
                flaky.requests.append(f"GET {self.path}")
                if self._misbehave():
                    return
                self._send_recorded_get()

            def do_POST(self) -> None:
                payload = self._json_body()
                flaky.requests.append(f"POST {self.path}")
                if self._misbehave():
                    return
                if self.path == "/api/embed":
                    inputs = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
                    vectors = [flaky._vectors[i % len(flaky._vectors)] for i in range(len(inputs))]
                    self._send(200, json.dumps({"model": MODEL, "embeddings": vectors}).encode())
                elif self.path == "/api/chat":
                    self._stream((RECORDINGS / "chat_stream.ndjson").read_bytes().splitlines(keepends=True))
                else:
                    self._send(404, b"404 page not found", "text/plain")

        return Handler

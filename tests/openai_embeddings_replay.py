"""Replays the `/v1/embeddings` exchanges recorded from llama-cpp-python's OpenAI-compatible server
(tests/fixtures/openai_embeddings/, written by scripts/record_openai_embeddings.py) through
``httpx.MockTransport``: a request whose method, path, body and key match a recording gets that
recording's status and body, byte for byte; anything else is a test failure, not a made-up answer."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

RECORDINGS = Path(__file__).parent / "fixtures" / "openai_embeddings"
RECORDED_KEY = "recording-key"
RECORDED_MODEL = "smollm2-embed"
RECORDED_BASE_URL = "http://127.0.0.1:8000/v1"  # any host: the transport answers; the path must match


def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / f"{name}.json").read_text())


def recorded_body(name: str) -> Any:
    return json.loads(recording(name)["body"])


@dataclass
class OpenAIEmbeddingsReplay:
    """``names``: the recordings to answer from; ``requests``: every request seen, as (path, JSON)."""

    names: tuple[str, ...] = (
        "models",
        "embed_documents",
        "embed_query",
        "embed_probe",
        "error_unauthorized",
        "models_unauthorized",
        "error_bad_request",
    )
    requests: list[tuple[str, Any]] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.url.path, body))
        authorized = request.headers.get("authorization") == f"Bearer {RECORDED_KEY}"
        for name in self.names:
            recorded = recording(name)
            wanted = recorded["request"]
            if (request.method, request.url.path, body, authorized) == (
                wanted["method"],
                wanted["path"],
                wanted["json"],
                wanted["authorized"],
            ):
                return httpx.Response(
                    recorded["status"],
                    content=recorded["body"].encode(),
                    headers={"content-type": recorded["content_type"]},
                )
        raise AssertionError(f"no recording for {request.method} {request.url.path} {body} (key ok: {authorized})")

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

"""The request body's budget (`BodyBudgetMiddleware`): a body that stalls is a 408, through a real
uvicorn server and its sockets (issue 25 row 12: ``Content-Length: 100`` with 19 bytes held a request
open for good)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from starlette.types import Message, Receive, Scope, Send

from carrag.api.main import create_app
from carrag.api.middleware import BodyBudgetMiddleware
from tests.conftest import close_container, make_settings, open_container
from tests.live_server import LiveServer

READ_TIMEOUT = 0.5


@pytest.fixture
async def served(tmp_path, embedding_backend) -> AsyncIterator[LiveServer]:
    settings = make_settings(tmp_path, body_read_timeout_seconds=READ_TIMEOUT)
    container = await open_container(settings, embedding_backend)
    with LiveServer(create_app(container=container)) as live:
        yield live
    await close_container(container)


def exchange(port: int, head: bytes, parts: Iterator[bytes] = iter(()), pause: float = 0.0) -> tuple[int, dict]:
    """Send ``head`` and then ``parts`` (``pause`` seconds apart) on one connection; the status and JSON
    body of the answer, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        for part in parts:
            time.sleep(pause)
            sock.sendall(part)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def request_head(path: str, content_type: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()


async def test_a_body_shorter_than_its_content_length_is_a_408(served: LiveServer) -> None:
    body = b'{"question": "x"}  '  # 19 bytes of the 100 declared
    status, answer = await asyncio.to_thread(
        exchange, served.port, request_head("/search", "application/json", 100) + body
    )
    assert status == 408
    assert "BODY_READ_TIMEOUT_SECONDS" in answer["detail"]


async def test_an_upload_that_stalls_half_way_is_a_408(served: LiveServer) -> None:
    boundary = "b0undary"
    part = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode() + b"Brake fluid. " * 100
    head = request_head("/ingest/file", f"multipart/form-data; boundary={boundary}", len(part) + 10_000)
    status, answer = await asyncio.to_thread(exchange, served.port, head + part)
    assert status == 408 and "stalled" in answer["detail"]


async def test_a_slow_body_that_keeps_coming_is_read(served: LiveServer) -> None:
    body = json.dumps({"question": "brake fluid", "top_k": 2}).encode()
    pieces = iter(body[i : i + 8] for i in range(0, len(body), 8))
    status, answer = await asyncio.to_thread(
        exchange, served.port, request_head("/search", "application/json", len(body)), pieces, READ_TIMEOUT / 3
    )
    assert status == 200, answer


async def test_after_the_body_the_wait_for_a_disconnect_has_no_timeout() -> None:
    """A streamed answer waits on ``receive`` for the client to leave, long after the body was read."""
    listened: list[str] = []

    async def streaming_app(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        listened.append((await receive())["type"])  # the disconnect, READ_TIMEOUT * 3 later
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    messages = [{"type": "http.request", "body": b"{}", "more_body": False}, {"type": "http.disconnect"}]

    async def receive() -> Message:
        if len(messages) == 1:
            await asyncio.sleep(READ_TIMEOUT * 3)
        return messages.pop(0)

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    middleware = BodyBudgetMiddleware(streaming_app, max_bytes=1000, read_timeout=READ_TIMEOUT)
    await middleware({"type": "http", "headers": [(b"content-type", b"application/json")]}, receive, send)

    assert listened == ["http.disconnect"]
    assert sent[0]["status"] == 200

"""Oversized uploads against a real uvicorn server on loopback: refused with 413 before the body is
read, and the server's memory stays flat while a client tries to push hundreds of megabytes."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from carrag.bench.measuring import PeakRss
from carrag.bench.server import ServerProcess, server_process

UPLOAD_LIMIT = 5 * 1024 * 1024
ATTEMPTED = 400 * 1024 * 1024  # what the client tries to send
BOUNDARY = "carrag-memory-test"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[ServerProcess]:
    data = tmp_path_factory.mktemp("upload-memory")
    with server_process(data, MAX_UPLOAD_BYTES=UPLOAD_LIMIT, LLM="none", RERANK_ENABLED="false") as running:
        yield running


def test_chunked_upload_of_hundreds_of_megabytes_is_cut_off_with_413(server: ServerProcess) -> None:
    pushed = 0

    def body() -> Iterator[bytes]:
        nonlocal pushed
        yield (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="huge.txt"\r\n'
            "Content-Type: text/plain\r\n\r\n"
        ).encode()
        block = b"lorem ipsum dolor sit amet " * 2427  # ~64 KiB
        while pushed < ATTEMPTED:
            pushed += len(block)
            yield block
        yield f"\r\n--{BOUNDARY}--\r\n".encode()

    with PeakRss(interval=0.02, pid=server.process.pid) as rss:
        started = time.monotonic()
        try:
            response = httpx.post(
                f"{server.url}/ingest/file",
                content=body(),
                timeout=60,
                headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
            )
            status = response.status_code
            detail = response.json()["detail"]
        except httpx.TransportError:
            # The server answered 413 and closed the connection while the client was still writing;
            # some clients report the broken pipe instead of the answer. The server must still be fine.
            status, detail = None, ""
        took = time.monotonic() - started
    print(
        f"chunked upload: status {status}, client pushed {pushed / 2**20:.1f} MiB of {ATTEMPTED / 2**20:.0f} MiB, "
        f"server RSS {rss.baseline_bytes / 2**20:.0f} MiB -> peak {rss.peak_mb:.0f} MiB, {took:.2f}s"
    )
    assert status in (413, None), (status, detail)
    if status == 413:
        assert "larger than" in detail
    assert pushed < ATTEMPTED / 4, f"the server kept reading: the client pushed {pushed / 2**20:.0f} MiB"
    assert rss.growth_mb < 64, f"server memory grew by {rss.growth_mb:.0f} MiB"
    assert took < 30
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
    assert httpx.get(f"{server.url}/documents", timeout=10).json()["total"] == 0


def test_declared_oversize_body_is_refused_without_reading_it(server: ServerProcess) -> None:
    """Content-Length says 400 MiB and no body byte is sent: the 413 must come anyway."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            f"POST /ingest/file HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {ATTEMPTED}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n".encode()
        )
        received = b""
        while chunk := sock.recv(65536):  # the server closes the connection after answering
            received += chunk
        answer = received.decode("latin-1")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert "larger than" in answer


def test_the_server_still_ingests_after_the_refusals(server: ServerProcess) -> None:
    data = b"The maintenance interval for the cabin air filter is 15,000 miles.\n" * 20
    response = httpx.post(f"{server.url}/ingest/file", files={"file": ("intervals.txt", data)}, timeout=120)
    assert response.status_code == 200, response.text

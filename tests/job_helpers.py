"""Inputs and waits shared by the ingest-job tests (services, API and shutdown)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx

COMPONENTS = ["oil filter", "brake pad", "coolant pump", "spark plug", "timing belt", "air filter", "wiper blade"]


def long_document(paragraphs: int) -> bytes:
    """Markdown of ``paragraphs`` distinct paragraphs (~230 characters each): about one chunk per two
    paragraphs at the default CHUNK_SIZE, and no two chunks alike (so the embedding cache cannot help)."""
    lines = ["# Maintenance schedule\n"]
    for number in range(paragraphs):
        part = COMPONENTS[number % len(COMPONENTS)]
        lines.append(
            f"Item {number}: inspect the {part} of assembly {number * 37 % 1009} every {1000 + number * 13} "
            f"kilometres. Record torque value {number % 97} Nm and reading {number * 7 % 101} in log book "
            f"section {number // 10}, then replace the {part} when wear exceeds {number % 9 + 1} millimetres.\n"
        )
    return "\n".join(lines).encode()


async def wait_for(condition: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.02)


async def poll_job(client: httpx.AsyncClient, job_id: str, until: set[str], timeout: float = 60.0) -> dict:
    """GET /jobs/{id} until its state is one of ``until``; the job's JSON."""
    deadline = time.monotonic() + timeout
    while True:
        job = (await client.get(f"/jobs/{job_id}")).json()
        if job["state"] in until:
            return job
        assert time.monotonic() < deadline, f"job stuck in {job['state']}"
        await asyncio.sleep(0.02)

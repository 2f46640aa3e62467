"""Bulk requests (`connection.py`): a write of many parts never has more than ``BULK_IN_FLIGHT``
requests in flight, and every item's outcome comes back in order; a closed connection opened again
from another event loop still bounds them."""

from __future__ import annotations

import asyncio
from typing import Any

from carrag.services.stores.elasticsearch.connection import BULK_IN_FLIGHT, PAGE, Connection, Operation


class CountingClient:
    """Answers every bulk item 201, after a pause, counting the requests in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0
        self.requests = 0

    def options(self, **_: Any) -> CountingClient:
        return self

    async def close(self) -> None:
        pass

    async def bulk(self, *, operations: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        self.requests += 1
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        ids = [line["index"]["_id"] for line in operations if "index" in line]
        return {"items": [{"index": {"_id": i, "status": 201}} for i in ids]}


async def test_a_large_write_sends_a_bounded_number_of_bulk_requests_at_once() -> None:
    connection = Connection("http://127.0.0.1:9")
    client = CountingClient()
    connection._client = client  # type: ignore[assignment]
    operations: list[Operation] = [({"index": {"_id": str(n)}}, {"n": n}) for n in range(PAGE * 3 * BULK_IN_FLIGHT)]
    items = await connection.bulk_together(operations, index="i", action="writing")
    assert [item.id for item in items] == [str(n) for n in range(len(operations))]
    assert client.requests == 3 * BULK_IN_FLIGHT
    assert client.most == BULK_IN_FLIGHT


def test_a_closed_connection_is_bounded_again_in_another_event_loop() -> None:
    """`close` lets the connection open a new client later, as from another `asyncio.run`; the bound
    must not stay tied to the first loop (a semaphore binds to the loop it first waited in)."""
    connection = Connection("http://127.0.0.1:9")
    operations: list[Operation] = [({"index": {"_id": str(n)}}, {"n": n}) for n in range(PAGE * 2 * BULK_IN_FLIGHT)]

    async def write() -> tuple[int, int]:
        client = CountingClient()
        connection._client = client  # type: ignore[assignment]
        items = await connection.bulk_together(operations, index="i", action="writing")
        await connection.close()
        return len(items), client.most

    for _ in range(2):
        loop = asyncio.new_event_loop()
        try:
            assert loop.run_until_complete(write()) == (len(operations), BULK_IN_FLIGHT)
        finally:
            loop.close()

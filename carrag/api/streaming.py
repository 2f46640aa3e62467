"""Shared by the streaming routes (/query/stream, /v1/chat/completions with stream=true)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def opened(events: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
    """Start ``events`` now: anything that fails before the first event (validation, overload,
    search errors) raises here, so the route answers with an HTTP error instead of a broken stream.
    Returns a generator that yields the first event and the rest, and closes ``events`` when it is
    closed itself (the client went away), which stops generation."""
    try:
        first = await anext(events)
    except BaseException:
        await events.aclose()
        raise

    async def replay() -> AsyncIterator[T]:
        try:
            yield first
            async for event in events:
                yield event
        finally:
            await events.aclose()

    return replay()  # type: ignore[return-value]

"""Bounded admission: at most ``running`` holders at once and at most ``waiting`` queued for a
turn (``None``: no cap), each for at most ``timeout`` seconds; one more, or one that waited too long,
is refused with `Overloaded` (429), instead of piling up behind a slow resource until every caller
times out. Searches, ingests and answer generation each have one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from carrag.services.errors import Overloaded


class AdmissionGate:
    def __init__(self, running: int, waiting: int | None, what: str, timeout: float | None = None) -> None:
        self.running = running
        self.waiting = waiting
        self.timeout = timeout
        self.what = what  # e.g. "answer generation", for the refusal messages
        self._slots = asyncio.Semaphore(running)
        self._queued = 0

    @property
    def queued(self) -> int:
        return self._queued

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        if self._slots.locked() and self.waiting is not None and self._queued >= self.waiting:
            raise Overloaded(
                f"{self.what.capitalize()} is at capacity ({self.running} running, {self._queued} waiting); "
                "retry shortly."
            )
        self._queued += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.timeout)
        except TimeoutError as exc:
            raise Overloaded(
                f"{self.what.capitalize()} had no free slot within {self.timeout:g}s; retry shortly."
            ) from exc
        finally:
            self._queued -= 1
        try:
            yield
        finally:
            self._slots.release()

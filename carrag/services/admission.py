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
        # Callers admitted and not yet gone (holding a slot or waiting for one), counted before the
        # first await: the decision to refuse never depends on when the event loop runs a waiter.
        self._inside = 0

    @property
    def queued(self) -> int:
        return max(0, self._inside - self.running)

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        if self.waiting is not None and self._inside >= self.running + self.waiting:
            raise Overloaded(
                f"{self.what.capitalize()} is at capacity ({self.running} running, {self.queued} waiting); "
                "retry shortly."
            )
        self._inside += 1
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    await self._slots.acquire()
            except TimeoutError as exc:
                raise Overloaded(
                    f"{self.what.capitalize()} had no free slot within {self.timeout:g}s; retry shortly."
                ) from exc
            try:
                yield
            finally:
                self._slots.release()
        finally:
            self._inside -= 1

"""Deleting retired versions a grace period after the epoch changes (`versions.py`, step 3).

Chunks of a version that was ever live are deleted only ``RETIRE_GRACE_SECONDS`` after the new
epoch that announces their retirement was written (acknowledged). That delay is what lets a search
read the epoch *beside* its searches instead of after them (`live_filter.py`, ``EpochRead``): a
reader that sent its epoch read at ``r`` and got the value it remembered knows every later epoch
write was acknowledged after ``r``, so no once-live chunk can be deleted before ``r + grace``; a
search that has ended before ``r + grace / 2`` (measured by the reader, on its own clock: half,
so no two clocks need to agree on more than their rate) therefore saw every version it remembers
whole. Longer searches fall back to the check after the search.

The grace is a constant of the code, not a setting: a writer with a shorter grace than its readers
assume would break their searches, and every process of one index runs the same version
(docs/deploy.md). Tests shorten it by patching this module's attribute.

Until the delete is sent the retired chunks stay in the index, unseen: readers drop them (the epoch
moved, so they read the records) and nothing counts them (counts come from the source records). The
deletes of one process are sent together once due, in one bulk request. A process that stops waits
for what it has scheduled (`flush`, at most the grace); one that dies leaves the version record,
and the sweep removes the version (`sweep.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)

RETIRE_GRACE_SECONDS = 5.0

# delete(ids, action, refresh): `Versions._delete_ids` (logs and leaves to the sweep what fails)
Delete = Callable[[list[str], str, "str | bool"], Awaitable[None]]


def grace() -> float:
    """The grace in force (read at each use, so a test's patch reaches writers and readers alike)."""
    return RETIRE_GRACE_SECONDS


@dataclass(slots=True, eq=False)
class _Scheduled:
    due: float  # monotonic
    ids: list[str]
    action: str
    refresh: str | bool


class DelayedDeletes:
    """The retired ids this process will delete, each batch ``grace()`` after its epoch write."""

    def __init__(self, delete: Delete) -> None:
        self._delete = delete
        self._pending: list[_Scheduled] = []
        self._sending = asyncio.Lock()  # one send at a time: `flush` returns once what was due is sent
        self._runner: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def pending(self) -> int:
        """Ids scheduled and not yet sent."""
        return sum(len(item.ids) for item in self._pending)

    def schedule(self, ids: list[str], action: str, refresh: str | bool = False) -> None:
        """Delete ``ids`` ``grace()`` from now; call only once the new epoch is acknowledged."""
        if not ids:
            return
        self._pending.append(_Scheduled(time.monotonic() + grace(), list(ids), action, refresh))
        if self._runner is None or self._runner.done():
            self._wake = asyncio.Event()  # of this event loop
            self._runner = asyncio.ensure_future(self._run())
        self._wake.set()

    async def flush(self) -> None:
        """Wait until everything scheduled so far is due, and until it is sent (a stopping process,
        the sweep, the integrity check). Never sends anything before its time."""
        if self._pending:
            await asyncio.sleep(max(item.due for item in self._pending) - time.monotonic())
        await self._send_due()

    async def close(self) -> None:
        await self.flush()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None

    async def _run(self) -> None:
        while self._pending:
            wait = min(item.due for item in self._pending) - time.monotonic()
            if wait > 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                continue
            try:
                await self._send_due()
            except Exception:  # never lose the runner; the sweep removes what is left
                logger.exception("deleting retired versions failed; left to the sweep")

    async def _send_due(self) -> None:
        async with self._sending:
            now = time.monotonic()
            due = [item for item in self._pending if item.due <= now]
            if not due:
                return
            self._pending = [item for item in self._pending if item.due > now]
            groups: dict[tuple[str, str | bool], list[str]] = {}
            for item in due:
                groups.setdefault((item.action, item.refresh), []).extend(item.ids)
            for (action, refresh), ids in groups.items():
                await self._delete(ids, action, refresh)

"""Deleting retired versions a grace period after the epoch changes (`versions.py`, step 3).

Chunks of a version that was ever live are deleted only ``RETIRE_GRACE_SECONDS`` after the new
epoch that announces their retirement was written (acknowledged). That delay is what lets a search
read the epoch *beside* its searches instead of after them (`live_filter.py`, ``EpochRead``): a
reader that sent its epoch read at ``r`` and got the value it remembered knows every later epoch
write was acknowledged after ``r``, so no once-live chunk can be deleted before ``r + grace``; a
search that has ended before ``r + grace / 2`` (measured by the reader) therefore saw every version
it remembers whole. Longer searches fall back to the check after the search. Each process measures
only durations, on a clock that keeps counting while the host is suspended (`now`), so no two
clocks need to agree on the time of day; the half leaves room for them to disagree on how long a
second is.

The grace is a constant of the code, not a setting: a writer with a shorter grace than its readers
assume would break their searches, and every process of one index runs the same version
(docs/deploy.md). Tests shorten it by patching this module's attribute.

Until the delete is sent the retired chunks stay in the index, unseen: readers drop them (the epoch
moved, so they read the records) and nothing counts them (counts come from the source records). The
deletes due in one process are sent together (one bulk request per kind of delete, split at
`BULK_MAX_OPS`). A process that stops waits for what it has scheduled (`close`, at most the grace);
one that dies leaves the version record, and the sweep removes the version (`sweep.py`). A writer
into an index no reader searches yet (reindex's new generation) deletes at once (``grace=0``).
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


def now() -> float:
    """Seconds on a clock that never goes back and keeps counting while the host is suspended
    (``CLOCK_BOOTTIME`` on Linux; ``time.monotonic`` stops during a suspend)."""
    return time.clock_gettime(_CLOCK)


_CLOCK = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)


@dataclass(slots=True, eq=False)
class _Scheduled:
    due: float  # `now()`
    ids: list[str]
    action: str
    refresh: str | bool


class DelayedDeletes:
    """The retired ids this process will delete, each batch ``grace()`` after its epoch write.
    ``immediate``: delete at once (an index no reader searches yet)."""

    def __init__(self, delete: Delete, *, immediate: bool = False) -> None:
        self._delete = delete
        self._immediate = immediate
        self._pending: list[_Scheduled] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sending = asyncio.Lock()  # one send at a time: `flush` returns once what was due is sent
        self._runner: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Ids scheduled and not yet sent."""
        return sum(len(item.ids) for item in self._pending)

    async def retire(self, ids: list[str], action: str, refresh: str | bool = False) -> None:
        """Delete ``ids`` ``grace()`` from now (call it once the new epoch is acknowledged); an
        immediate instance deletes them before returning."""
        if not ids:
            return
        if self._immediate:
            await self._delete(list(ids), action, refresh)
            return
        self._bind()
        self._pending.append(_Scheduled(now() + grace(), list(ids), action, refresh))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self._run())

    async def flush(self) -> None:
        """Wait until everything scheduled so far is due, and until it is sent (the sweep, the
        integrity check). Never sends anything before its time."""
        self._bind()
        if self._pending:
            await asyncio.sleep(max(item.due for item in self._pending) - now())
        await self._send_due()

    async def close(self) -> None:
        """Send everything scheduled, each when due, then stop (a stopping process)."""
        self._bind()
        while self._pending:
            await self.flush()
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            self._runner = None

    def _bind(self) -> None:
        """The lock and the runner belong to one event loop: a store used from another loop (a
        second ``asyncio.run``) starts afresh; what the old loop left pending is kept."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._sending = asyncio.Lock()
            self._runner = None

    async def _run(self) -> None:
        # The grace is the same for every batch, so a batch scheduled later is never due earlier:
        # sleeping until the earliest due time misses nothing.
        while self._pending:
            wait = min(item.due for item in self._pending) - now()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            try:
                await self._send_due()
            except Exception:  # never lose the runner; the sweep removes what is left
                logger.exception("deleting retired versions failed; left to the sweep")

    async def _send_due(self) -> None:
        async with self._sending:
            moment = now()
            due = [item for item in self._pending if item.due <= moment]
            if not due:
                return
            self._pending = [item for item in self._pending if item.due > moment]
            groups: dict[tuple[str, str | bool], list[_Scheduled]] = {}
            for item in due:
                groups.setdefault((item.action, item.refresh), []).append(item)
            unsent = list(groups.items())
            try:
                while unsent:
                    (action, refresh), items = unsent[0]
                    await self._delete([i for item in items for i in item.ids], action, refresh)
                    unsent.pop(0)
            except asyncio.CancelledError:  # a stopping sweep's flush: keep them for the next send
                self._pending.extend(item for _, items in unsent for item in items)
                raise

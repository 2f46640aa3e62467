"""Following a folder as it changes (`carrag sync DIR --watch`): watchfiles, else polling, and one yield
per burst of changes once ``quiet`` seconds have passed without one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

MAX_GROUPING = 30.0  # seconds: changes that never stop still give a sync this often


async def folder_changes(root: Path, quiet: float, *, native: bool = True) -> AsyncIterator[None]:
    """Yields after each settled burst of changes under ``root`` (forever: the caller stops it).
    ``native`` False polls even when watchfiles is installed."""
    try:
        if not native:
            raise ImportError
        from watchfiles import awatch
    except ImportError:
        async for _ in _polled_changes(root, quiet):
            yield
        return
    quiet_ms = max(1, int(quiet * 1000))
    async for _ in awatch(root, step=quiet_ms, debounce=max(quiet_ms, int(MAX_GROUPING * 1000))):
        yield


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every visible file under ``root`` with its size and modification time (blocking)."""
    seen: dict[str, tuple[int, int]] = {}
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            try:
                status = os.stat(path)
            except OSError:
                continue
            seen[path] = (status.st_size, status.st_mtime_ns)
    return seen


async def _polled_changes(root: Path, quiet: float) -> AsyncIterator[None]:
    synced = await asyncio.to_thread(snapshot, root)
    while True:
        await asyncio.sleep(quiet)
        current = await asyncio.to_thread(snapshot, root)
        if current == synced:
            continue
        while True:  # wait for the burst to settle: two snapshots ``quiet`` apart agree
            await asyncio.sleep(quiet)
            settled = await asyncio.to_thread(snapshot, root)
            if settled == current:
                break
            current = settled
        synced = current
        yield

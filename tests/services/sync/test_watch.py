"""`folder_changes` (carrag/services/sync/watch.py): one yield per settled burst of changes, with
watchfiles and with the polling fallback."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from carrag.services.sync.watch import folder_changes


@pytest.mark.parametrize("native", [True, False], ids=["watchfiles", "polling"])
async def test_a_burst_of_changes_gives_one_yield(tmp_path: Path, native: bool) -> None:
    (tmp_path / "a.md").write_text("first")
    yields: list[float] = []
    changes = folder_changes(tmp_path, quiet=0.4, native=native)

    async def collect() -> None:
        async for _ in changes:
            yields.append(asyncio.get_running_loop().time())

    watcher = asyncio.create_task(collect())
    await asyncio.sleep(0.6)  # the watcher has taken its first look
    assert yields == []
    for number in range(5):  # a burst: five writes 0.1 s apart
        (tmp_path / f"new-{number}.md").write_text(f"note {number}")
        await asyncio.sleep(0.1)
    await asyncio.sleep(2.5)
    assert len(yields) == 1, "one sync for the burst"
    (tmp_path / "a.md").unlink()
    await asyncio.sleep(2.5)
    assert len(yields) == 2, "a later change gives another"
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    await changes.aclose()

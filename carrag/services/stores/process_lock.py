"""One process per embedded store: an exclusive ``flock`` on ``<database>.lock`` from `open` to `close`.

The search indexes beside the SQLite file are caches one process keeps in step with it; a second
process would need its own copy, so it is refused with a clear error. The lock dies with its process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from carrag.services.errors import DependencyUnavailable


class StoreInUse(DependencyUnavailable):
    def __init__(self, database: Path, holder: str) -> None:
        super().__init__(
            "store",
            f"the SQLite store {database} is already open in another Carrag process ({holder}). "
            "The embedded store serves one process at a time: stop that process, give this one another "
            "SQLITE_PATH / DATA_DIR, or run several replicas against Elasticsearch (STORE=elasticsearch).",
        )


class ProcessLock:
    def __init__(self, database: Path) -> None:
        self.database = database
        self.path = database.with_name(database.name + ".lock")
        self._descriptor: int | None = None

    def acquire(self) -> None:
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 64, 0).decode(errors="replace").strip()
            os.close(descriptor)
            if holder == str(os.getpid()):
                holder = f"this process, pid {holder}: another store object holds it"
            raise StoreInUse(self.database, f"pid {holder}" if holder.isdigit() else holder or "pid unknown") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        self._descriptor = descriptor

    def release(self) -> None:
        if self._descriptor is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._descriptor, 0)
        os.close(self._descriptor)  # closing the descriptor releases the flock
        self._descriptor = None

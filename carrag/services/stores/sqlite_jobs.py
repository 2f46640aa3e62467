"""Ingest-job records in the SQLite store's file: a ``jobs`` table (`JobRepository`), on a connection and
thread of their own so job bookkeeping never waits behind a long document write. Each row has a
``revision`` every write increments; an update names the revision it read (``UPDATE … WHERE revision
= ?``), as the Elasticsearch adapter uses ``if_seq_no``. A job that was running when the process died
is reported failed once its lease has run out.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from carrag.services.errors import DependencyUnavailable
from carrag.services.jobs.repository import FINISHED_STATE_VALUES, JobRecord, StoredJob
from carrag.services.stores.sqlite_schema import JOBS_SCHEMA

T = TypeVar("T")


_FINISHED = ",".join("?" * len(FINISHED_STATE_VALUES))


def _row(record: JobRecord) -> tuple[Any, ...]:
    return (
        record["state"],
        record["created_at"],
        record.get("lease_expires_at"),
        record.get("finished_at"),
        json.dumps(record),
    )


class SqliteJobRepository:
    def __init__(self, path: Path, *, unavailable: str | None = None) -> None:
        """``unavailable``: why the store itself could not be opened (another process holds the file):
        then job records are refused too, rather than written into a file this process does not own."""
        self.path = Path(path)
        self.unavailable = unavailable
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-jobs")
        self._connection: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA busy_timeout = 30000")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.executescript(JOBS_SCHEMA)  # already there: the store creates it on open
            self._connection = connection
        return self._connection

    async def _run(self, function: Callable[[sqlite3.Connection], T]) -> T:
        if self.unavailable is not None:  # the store's own error, already "store unavailable: …"
            raise DependencyUnavailable("store", self.unavailable.removeprefix("store unavailable: "))
        loop = asyncio.get_running_loop()
        try:
            # Shielded: a cancelled caller never leaves the statement half-run on the thread.
            return await asyncio.shield(loop.run_in_executor(self._thread, lambda: function(self._open())))
        except sqlite3.DatabaseError as exc:
            raise DependencyUnavailable("store", f"SQLite job bookkeeping failed: {exc}") from exc

    async def create(self, record: JobRecord) -> Any | None:
        def insert(connection: sqlite3.Connection) -> int | None:
            cursor = connection.execute(
                "INSERT INTO jobs(job_id, revision, state, created_at, lease_expires_at, finished_at, record) "
                "VALUES (?, 1, ?, ?, ?, ?, ?) ON CONFLICT(job_id) DO NOTHING",
                (record["job_id"], *_row(record)),
            )
            return 1 if cursor.rowcount == 1 else None

        return await self._run(insert)

    async def read(self, job_id: str) -> StoredJob | None:
        def select(connection: sqlite3.Connection) -> StoredJob | None:
            row = connection.execute("SELECT record, revision FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            return StoredJob(json.loads(row[0]), row[1]) if row else None

        return await self._run(select)

    async def update(self, record: JobRecord, revision: Any) -> Any | None:
        def conditional_update(connection: sqlite3.Connection) -> int | None:
            cursor = connection.execute(
                "UPDATE jobs SET revision = revision + 1, state = ?, created_at = ?, lease_expires_at = ?, "
                "finished_at = ?, record = ? WHERE job_id = ? AND revision = ?",
                (*_row(record), record["job_id"], revision),
            )
            return revision + 1 if cursor.rowcount == 1 else None

        return await self._run(conditional_update)

    async def delete(self, job_id: str) -> None:
        await self._run(lambda connection: connection.execute("DELETE FROM jobs WHERE job_id = ?", (job_id,)))

    async def recent(self, limit: int) -> list[StoredJob]:
        def select(connection: sqlite3.Connection) -> list[StoredJob]:
            rows = connection.execute(
                "SELECT record, revision FROM jobs ORDER BY created_at DESC LIMIT ?", (limit,)
            ).fetchall()
            return [StoredJob(json.loads(record), revision) for record, revision in rows]

        return await self._run(select)

    async def count(self) -> int:
        return await self._run(lambda connection: connection.execute("SELECT count(*) FROM jobs").fetchone()[0])

    async def expired(self, now: float, limit: int) -> list[StoredJob]:
        def select(connection: sqlite3.Connection) -> list[StoredJob]:
            rows = connection.execute(
                f"SELECT record, revision FROM jobs WHERE finished_at IS NULL AND state NOT IN ({_FINISHED}) "
                "AND lease_expires_at < ? LIMIT ?",
                (*FINISHED_STATE_VALUES, now, limit),
            ).fetchall()
            return [StoredJob(json.loads(record), revision) for record, revision in rows]

        return await self._run(select)

    async def purge(self, finished_before: float, keep: int) -> int:
        def delete(connection: sqlite3.Connection) -> int:
            expired = connection.execute("DELETE FROM jobs WHERE finished_at < ?", (finished_before,)).rowcount
            beyond = connection.execute(
                "DELETE FROM jobs WHERE job_id IN (SELECT job_id FROM jobs WHERE finished_at IS NOT NULL "
                "ORDER BY finished_at DESC LIMIT -1 OFFSET ?)",
                (keep,),
            ).rowcount
            return expired + beyond

        return await self._run(delete)

    async def close(self) -> None:
        def close(connection: sqlite3.Connection | None) -> None:
            if connection is not None:
                connection.close()

        if self._connection is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, close, self._connection)
            self._connection = None  # the next call opens it again

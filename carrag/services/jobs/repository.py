"""Where ingest-job records live: the `JobRepository` port and its in-memory adapter (the store adapters
are `stores/sqlite_jobs.py` and `stores/elasticsearch/jobs.py`).

Each stored record carries a revision that changes with every write: an update names the revision it
read and returns ``None`` when the record changed meanwhile, so processes never overwrite each other's
transitions. Queried fields: ``job_id``, ``state``, ``created_at`` (ISO 8601), ``lease_expires_at``
and ``finished_at`` (epoch seconds).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from typing import Any, Protocol

from carrag.services.vocabulary import FINISHED_JOB_STATES

JobRecord = dict[str, Any]
FINISHED_STATE_VALUES = sorted(str(state) for state in FINISHED_JOB_STATES)


@dataclass(slots=True, frozen=True)
class StoredJob:
    record: JobRecord
    revision: Any  # opaque: compare only by handing it back to the repository that returned it


class JobRepository(Protocol):
    async def create(self, record: JobRecord) -> Any | None:
        """Store a new record; its revision, or None when a record with its id exists (a sync's id names
        what it syncs: `Leases.claim`)."""
        ...

    async def read(self, job_id: str) -> StoredJob | None:
        """The record as it is now (never stale), or None."""
        ...

    async def update(self, record: JobRecord, revision: Any) -> Any | None:
        """Replace the record if it is still at ``revision``: the new revision, or None if it changed
        (or vanished) meanwhile."""
        ...

    async def delete(self, job_id: str) -> None: ...

    async def recent(self, limit: int) -> list[StoredJob]:
        """Newest first (by ``created_at``)."""
        ...

    async def count(self) -> int: ...

    async def expired(self, now: float, limit: int) -> list[StoredJob]:
        """Unfinished jobs whose lease ran out before ``now`` (epoch seconds)."""
        ...

    async def purge(self, finished_before: float, keep: int) -> int:
        """Delete finished jobs that finished before ``finished_before``, then the oldest finished ones
        beyond the newest ``keep``; how many were deleted."""
        ...

    async def close(self) -> None: ...


def is_finished(record: JobRecord) -> bool:
    return record["state"] in FINISHED_STATE_VALUES


def lease_expired(record: JobRecord, now: float) -> bool:
    expires = record.get("lease_expires_at")
    return not is_finished(record) and expires is not None and expires < now


class InMemoryJobRepository:
    """Records in this process's memory; the same semantics as the durable adapters, no durability."""

    def __init__(self) -> None:
        self._records: dict[str, StoredJob] = {}
        self._revisions = itertools.count(1)

    async def create(self, record: JobRecord) -> Any | None:
        if record["job_id"] in self._records:
            return None
        return self._store(record)

    def _store(self, record: JobRecord) -> Any:
        revision = next(self._revisions)
        self._records[record["job_id"]] = StoredJob(copy.deepcopy(record), revision)
        return revision

    async def read(self, job_id: str) -> StoredJob | None:
        stored = self._records.get(job_id)
        return StoredJob(copy.deepcopy(stored.record), stored.revision) if stored else None

    async def update(self, record: JobRecord, revision: Any) -> Any | None:
        stored = self._records.get(record["job_id"])
        if stored is None or stored.revision != revision:
            return None
        return self._store(record)

    async def delete(self, job_id: str) -> None:
        self._records.pop(job_id, None)

    async def recent(self, limit: int) -> list[StoredJob]:
        newest = sorted(self._records.values(), key=lambda s: s.record["created_at"], reverse=True)
        return [StoredJob(copy.deepcopy(s.record), s.revision) for s in newest[:limit]]

    async def count(self) -> int:
        return len(self._records)

    async def expired(self, now: float, limit: int) -> list[StoredJob]:
        return [s for s in self._records.values() if lease_expired(s.record, now)][:limit]

    async def purge(self, finished_before: float, keep: int) -> int:
        finished = sorted(
            (s.record for s in self._records.values() if is_finished(s.record)),
            key=lambda r: r.get("finished_at") or 0.0,
            reverse=True,
        )
        doomed = [r["job_id"] for r in finished[keep:]]
        doomed += [r["job_id"] for r in finished[:keep] if (r.get("finished_at") or 0.0) < finished_before]
        for job_id in doomed:
            del self._records[job_id]
        return len(doomed)

    async def close(self) -> None:
        pass

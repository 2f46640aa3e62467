"""Leases on ingest jobs: how a job's record stays true when its process dies, and how a cancel asked
on another replica reaches that process.

The owner renews the lease every JOB_LEASE_RENEW_SECONDS with a write conditional on the revision it
last saw. A conflict means another replica asked for a cancel (the owner stops the job unless it is
writing) or settled the job as failed after the lease ran out. Whoever reads an expired job settles it
under the same condition, so exactly one verdict is recorded; the owner's final outcome overwrites any
verdict. ``lease_expires_at`` is wall-clock time: hosts' clocks must agree well within JOB_LEASE_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from carrag.services.errors import CarragError
from carrag.services.jobs.model import Job
from carrag.services.jobs.repository import JobRecord, JobRepository, StoredJob, is_finished, lease_expired
from carrag.services.vocabulary import JobState

logger = logging.getLogger(__name__)

WRITE_ATTEMPTS = 8  # conflicting writes retried (each conflict means someone else wrote the record)
PROGRESS_WRITE_INTERVAL = 0.25  # seconds: progress is written at most this often
FINAL_WRITE_RETRY_SECONDS = 1.0

Stop = Callable[[Job, str, JobState], bool]  # (job, error, state to end in) -> whether it was stopped


def expired_reason(job: Job) -> str:
    when = datetime.fromtimestamp(job.lease_expires_at or 0.0, UTC).isoformat(timespec="seconds")
    reason = f"its process ({job.owner}) stopped before the job finished (lease expired at {when})"
    if job.state == JobState.INDEXING:
        return (
            f"{reason}, while writing the document: the store holds either the whole new version or none of it "
            "(any previous version stays until a new one is whole)"
        )
    return f"{reason}; nothing of it was stored"


class Leases:
    def __init__(self, repository: JobRepository, *, lease: float, renew: float) -> None:
        self.repository = repository
        self.lease = lease
        self.renew = min(renew, lease / 2)

    def expiry(self) -> float:
        return time.time() + self.lease

    # --- the owner's side -------------------------------------------------------------------------------
    async def keep_alive(self, job: Job, stop: Stop) -> None:
        """Renew ``job``'s lease until it finishes; write its progress as it changes."""
        while not job.finished:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.changed.wait(), timeout=self.renew)
            job.changed.clear()
            if job.finished:
                return
            await self._renew(job, stop)
            await asyncio.sleep(PROGRESS_WRITE_INTERVAL)

    async def _renew(self, job: Job, stop: Stop) -> None:
        try:
            for _ in range(WRITE_ATTEMPTS):
                job.lease_expires_at = self.expiry()
                revision = await self.repository.update(job.to_record(), job.revision)
                if revision is not None:
                    job.revision = revision
                    break
                stored = await self.repository.read(job.job_id)
                if stored is None or is_finished(stored.record):
                    verdict = stored.record.get("error") if stored else "its record was removed"
                    logger.warning(
                        "an ingest job's lease was lost; stopping it",
                        extra={"job_id": job.job_id, "verdict": verdict},
                    )
                    stop(job, f"{verdict}", JobState.FAILED)
                    return
                job.revision = stored.revision
                job.cancel_requested = job.cancel_requested or bool(stored.record.get("cancel_requested"))
        except CarragError as exc:  # the store is unreachable: keep running, try again at the next renewal
            logger.warning("could not renew an ingest job's lease", extra={"job_id": job.job_id, "reason": exc.message})
            return
        if job.cancel_requested:
            stop(job, "cancelled", JobState.CANCELLED)

    async def save_final(self, job: Job) -> None:
        """Record how the job ended, over whatever is stored (the owner knows best)."""
        for _ in range(WRITE_ATTEMPTS):
            try:
                revision = await self.repository.update(job.to_record(), job.revision)
                if revision is not None:
                    job.revision = revision
                    return
                stored = await self.repository.read(job.job_id)
                if stored is None:
                    return  # removed (retention): nothing to record
                job.revision = stored.revision
                job.cancel_requested = job.cancel_requested or bool(stored.record.get("cancel_requested"))
            except CarragError as exc:
                logger.warning(
                    "could not record how an ingest job ended; retrying",
                    extra={"job_id": job.job_id, "reason": exc.message},
                )
                await asyncio.sleep(FINAL_WRITE_RETRY_SECONDS)
        logger.error("gave up recording how an ingest job ended", extra={"job_id": job.job_id, "state": job.state})

    async def claim(self, record: JobRecord) -> Any | None:
        """Record a job whose id names what it works on (a sync's folder or site): created, or written over
        that id's finished record, or over a running one whose lease ran out (its process died). Its
        revision, or None while a job of that id runs, on this replica or any other."""
        for _ in range(WRITE_ATTEMPTS):
            stored = await self.repository.read(record["job_id"])
            if stored is None:
                revision = await self.repository.create(record)
            elif is_finished(stored.record) or lease_expired(stored.record, time.time()):
                revision = await self.repository.update(record, stored.revision)
            else:
                return None
            if revision is not None:
                return revision
        return None

    # --- everyone else's side ---------------------------------------------------------------------------
    async def settle(self, stored: StoredJob) -> Job:
        """The job as it stands: a job whose lease has run out is recorded failed (or cancelled, if that
        was asked for) first. Safe to call from any number of processes at once."""
        for _ in range(WRITE_ATTEMPTS):
            job = Job.from_record(stored.record, stored.revision)
            if not lease_expired(stored.record, time.time()):
                return job
            reason = expired_reason(job)
            state = JobState.CANCELLED if job.cancel_requested else JobState.FAILED
            job.error = f"cancelled: {reason}" if job.cancel_requested else reason
            job._enter(state)
            revision = await self.repository.update(job.to_record(), stored.revision)
            if revision is not None:
                job.revision = revision
                logger.warning(
                    "ingest job settled after its lease expired",
                    extra={"job_id": job.job_id, "owner": job.owner, "state": state},
                )
                return job
            again = await self.repository.read(job.job_id)
            if again is None:
                break
            stored = again
        return Job.from_record(stored.record, stored.revision)

    async def request_cancel(self, stored: StoredJob) -> StoredJob | None:
        """Set the job's cancel flag (conditionally); the stored job after the write, or None if it
        changed meanwhile (the caller re-reads and decides again)."""
        record = {**stored.record, "cancel_requested": True, "updated_at": datetime.now(UTC).isoformat()}
        revision = await self.repository.update(record, stored.revision)
        return StoredJob(record, revision) if revision is not None else None

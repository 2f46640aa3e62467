"""Asynchronous ingestion (``?async=true``, syncs and crawls): the same pipeline and admission as a
synchronous ingest, run as a job whose record lives in the store, so ``GET /jobs/{id}`` answers on any
replica and after a restart.

Jobs are not resumed after a restart (an upload's bytes live only in the accepting process's memory);
a dead process's jobs are settled as failed once their lease runs out (`leases.py`). The pipeline
writes nothing before its final atomic ``write_document``, so cancelling before state ``indexing``
leaves nothing behind; after it, the job finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.errors import CarragError, Conflict, DependencyUnavailable, NotFound
from carrag.services.ingestion import IngestionService, IngestObserver, IngestResult
from carrag.services.jobs.leases import Leases
from carrag.services.jobs.model import INTERNAL_ERROR, Job
from carrag.services.jobs.repository import InMemoryJobRepository, JobRepository, StoredJob, is_finished
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.telemetry import NullTelemetry, Telemetry
from carrag.services.vocabulary import JobKind, JobState

__all__ = ["JobManager"]

logger = logging.getLogger(__name__)

Work = Callable[[IngestObserver], Awaitable[IngestResult]]
ExclusiveWork = Callable[[Job], Awaitable[None]]  # a sync or crawl: it reports into the job as it goes

SWEEP_BATCH = 100  # expired jobs settled per sweep
PURGE_EVERY_SECONDS = 60.0
CANCEL_POLL_SECONDS = 0.1


class JobManager:
    def __init__(
        self,
        settings: Settings,
        ingestion: IngestionService,
        telemetry: Telemetry | None = None,
        repository: JobRepository | None = None,
    ) -> None:
        self.settings = settings
        self.ingestion = ingestion
        self.repository = repository or InMemoryJobRepository()
        self.leases = Leases(self.repository, lease=settings.job_lease_seconds, renew=settings.job_lease_renew_seconds)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._jobs: OrderedDict[str, Job] = OrderedDict()  # the jobs this process runs or ran, oldest first
        self._keepers: dict[str, asyncio.Task[None]] = {}  # lease renewal, per running job
        self._sweeper: asyncio.Task[None] | None = None
        self._drain: asyncio.Task[None] | None = None
        self.telemetry = telemetry or NullTelemetry()
        self.telemetry.watch_jobs(self.counts_by_state)

    # --- submitting ------------------------------------------------------------------------------
    async def submit_file(self, data: bytes, filename: str, options: IngestCommand) -> Job:
        return await self._submit(
            JobKind.FILE,
            filename,
            lambda observer: self.ingestion.ingest_file(data, filename, options, observer),
            options.collection,
        )

    async def submit_url(self, url: str, options: IngestCommand) -> Job:
        return await self._submit(
            JobKind.URL, url, lambda observer: self.ingestion.ingest_url(url, options, observer), options.collection
        )

    async def _submit(self, kind: JobKind, source: str, work: Work, collection: str) -> Job:
        job = self._new_job(uuid.uuid4().hex, kind, source, collection)
        self._jobs[job.job_id] = job
        job.task = asyncio.create_task(self._run(job, work), name=f"ingest-job-{job.job_id}")
        # Let the task take its first step now. It runs up to its first real wait: either it is
        # refused at once (admission: 429 when the queue is full, 503 during shutdown; or input
        # refused before any I/O), or it is waiting for a slot, or it is working. A refusal is the
        # caller's answer and leaves no job behind.
        await asyncio.sleep(0)
        if job.state == JobState.FAILED and isinstance(job.exception, CarragError):
            del self._jobs[job.job_id]
            raise job.exception
        try:
            job.revision = await self.leases.repository.create(job.to_record())
        except CarragError:  # no record, no job: stop the work (it has written nothing yet)
            del self._jobs[job.job_id]
            if job.task is not None:
                job.task.cancel()
                await asyncio.wait({job.task})
            raise
        job.accepted = True
        if job.finished:  # finished while it was being recorded
            await self.leases.save_final(job)
            self._report(job)
        else:
            self._keepers[job.job_id] = asyncio.create_task(
                self.leases.keep_alive(job, self._stop), name=f"ingest-job-lease-{job.job_id}"
            )
        return job

    async def submit_exclusive(
        self, job_id: str, kind: JobKind, source: str, collection: str, work: ExclusiveWork
    ) -> Job:
        """A job of which one at a time may run, on any replica: ``job_id`` names what it works on (a sync's
        folder or site) and its record is claimed before the work starts (`Leases.claim`); Conflict (409)
        while another job of that id runs. Its record replaces that of the id's previous run."""
        job = self._new_job(job_id, kind, source, collection)
        revision = await self.leases.claim(job.to_record())
        if revision is None:
            raise Conflict(
                f"A {kind} of {source} is already running (job {job_id}); wait for it to finish, or cancel it "
                f"with DELETE /jobs/{job_id}."
            )
        job.revision, job.accepted = revision, True
        self._jobs.pop(job_id, None)  # the previous run's, if this process ran it
        self._jobs[job_id] = job
        job.task = asyncio.create_task(self._run(job, work), name=f"{kind}-job-{job_id}")
        self._keepers[job_id] = asyncio.create_task(self.leases.keep_alive(job, self._stop), name=f"job-lease-{job_id}")
        return job

    def _new_job(self, job_id: str, kind: JobKind, source: str, collection: str) -> Job:
        # Shutdown has begun: 503 now. Left to the job's own slot check, a job submitted in the loop
        # iteration that starts the drain would be cancelled by it before its first step, never
        # finish, and be accepted (202) as queued.
        self.ingestion.check_accepting()
        self.start()
        self._prune()
        job = Job(job_id=job_id, kind=kind, source=source, collection=collection, owner=self.owner)
        job.lease_expires_at = self.leases.expiry()
        return job

    async def _run(self, job: Job, work: Work | ExclusiveWork) -> None:
        try:
            result = await work(job)  # an ingest waits for an ingestion slot first
        except asyncio.CancelledError:
            job.error = job.error or "cancelled"
            await self._finish(job, job.stop_as)
            raise
        except CarragError as exc:
            job.error, job.exception = exc.message, exc
            await self._finish(job, JobState.FAILED)
        except Exception as exc:
            logger.exception("ingest job crashed", extra={"job_id": job.job_id, "source": job.source})
            job.error, job.exception = INTERNAL_ERROR, exc
            await self._finish(job, JobState.FAILED)
        else:
            job.result = result
            if result is not None and result.chunk_count and not job.progress.total:
                job.progress.done = job.progress.total = result.chunk_count  # unchanged: nothing embedded
            await self._finish(job, JobState.DONE)

    async def _finish(self, job: Job, state: JobState) -> None:
        job._enter(state)
        if job.accepted:
            keeper = self._keepers.pop(job.job_id, None)
            if keeper is not None:
                keeper.cancel()
            self._report(job)
            # Shielded: a second cancel (shutdown) must not stop the record of how the job ended.
            await asyncio.shield(self.leases.save_final(job))

    def _report(self, job: Job) -> None:
        logger.info(
            "ingest job finished",
            extra={
                "job_id": job.job_id,
                "source": job.source,
                "state": job.state,
                "error": job.error,
                "timings_ms": job.timings_ms,
            },
        )
        self.telemetry.job_finished(job.state)
        if isinstance(job.exception, DependencyUnavailable):
            self.telemetry.dependency_failed(job.exception.component)
        job.exception = None  # its traceback holds the pipeline's frames (the upload, the text)

    def _stop(self, job: Job, error: str, state: JobState) -> bool:
        """Cancel a job this process runs, to end in ``state``; a job already writing its document
        finishes instead (the write is atomic and short)."""
        if job.finished or job.task is None or job.state == JobState.INDEXING:
            return False
        job.error, job.stop_as = error, state
        job.task.cancel()
        return True

    # --- reading ----------------------------------------------------------------------------------
    async def get(self, job_id: str, principal: Principal = FULL_ACCESS) -> Job:
        """The job as it stands, from whichever process runs or ran it; NotFound (404) also when it
        ingests into a collection ``principal`` may not read."""
        job = await self._get(job_id)
        if not principal.can_read(job.collection):
            raise NotFound(f"No ingest job with id {job_id} (finished jobs expire after JOB_TTL_SECONDS).")
        return job

    async def _get(self, job_id: str) -> Job:
        self.start()
        self._prune()
        local = self._jobs.get(job_id)
        if local is not None:
            return local  # this process runs or ran it: fresher than its record
        stored = await self.leases.repository.read(job_id)
        if stored is None or self._expired(stored):
            raise NotFound(f"No ingest job with id {job_id} (finished jobs expire after JOB_TTL_SECONDS).")
        return await self.leases.settle(stored)

    async def recent(self, limit: int, principal: Principal = FULL_ACCESS) -> list[Job]:
        """Newest first: the store's newest records, and this process's own (a new job may take a
        refresh interval to show in an Elasticsearch listing); only those ``principal`` may read."""
        if principal.collections is None:
            return await self._recent(limit)
        visible = [job for job in await self._recent(self.settings.job_retention) if principal.can_read(job.collection)]
        return visible[:limit]

    async def total(self, principal: Principal = FULL_ACCESS) -> int:
        """Jobs in the store: running, queued and finished ones not yet expired (those ``principal`` may read)."""
        if principal.collections is None:
            return await self.leases.repository.count()
        return len(await self.recent(self.settings.job_retention, principal))

    async def _recent(self, limit: int) -> list[Job]:
        self.start()
        self._prune()
        stored = await self.leases.repository.recent(limit)
        jobs: dict[str, Job] = {}
        for item in stored:
            if self._expired(item):
                continue
            local = self._jobs.get(item.record["job_id"])
            jobs[item.record["job_id"]] = local if local is not None else await self.leases.settle(item)
        for job in self._jobs.values():
            jobs.setdefault(job.job_id, job)
        newest = sorted(jobs.values(), key=lambda job: job.created_at, reverse=True)
        return newest[:limit]

    def counts_by_state(self) -> dict[str, int]:
        """This process's jobs, by state (for metrics: each replica reports its own)."""
        return dict(Counter(job.state for job in self._jobs.values()))

    def _expired(self, stored: StoredJob) -> bool:
        finished_at = stored.record.get("finished_at")
        return (
            is_finished(stored.record)
            and finished_at is not None
            and finished_at < time.time() - self.settings.job_ttl_seconds
        )

    def _prune(self) -> None:
        """Forget this process's finished jobs past their TTL, then the oldest beyond JOB_RETENTION
        (their records stay in the store until the sweep purges them)."""
        expired_before = time.time() - self.settings.job_ttl_seconds
        finished = [job for job in self._jobs.values() if job.finished_at is not None]
        for job in finished:
            if job.finished_at < expired_before:  # type: ignore[operator]
                del self._jobs[job.job_id]
        finished = [job for job in self._jobs.values() if job.finished_at is not None]
        for job in finished[: max(0, len(finished) - self.settings.job_retention)]:
            del self._jobs[job.job_id]

    # --- cancelling ---------------------------------------------------------------------------------
    async def cancel(self, job_id: str, principal: Principal = FULL_ACCESS) -> Job:
        """Cancel a job and wait until it has stopped; it leaves nothing in the store. Works on any
        replica: a job another process runs is stopped by that process at its next lease renewal."""
        if not principal.full_access:
            principal.check_write((await self.get(job_id, principal)).collection)
        local = self._jobs.get(job_id)
        if local is not None and local.task is not None and not local.finished:
            self._refuse_if_too_late(local)
            task = local.task
            task.cancel()
            await asyncio.wait({task})
            return local
        job = await self.get(job_id)
        for _ in range(8):
            stored = await self.leases.repository.read(job_id)
            if stored is None:
                raise NotFound(f"No ingest job with id {job_id}.")
            job = await self.leases.settle(stored)
            self._refuse_if_too_late(job)
            if job.cancel_requested or await self.leases.request_cancel(stored) is not None:
                break
        return await self._wait_for_cancel(job_id)

    async def _wait_for_cancel(self, job_id: str) -> Job:
        """Wait for the owner to stop the job (or for its lease to run out, if it died)."""
        deadline = time.monotonic() + self.leases.lease + self.leases.renew
        while True:
            job = await self.get(job_id)
            if job.state == JobState.DONE:
                raise Conflict(
                    f"Ingest job {job_id} finished writing its document before the cancel reached it; delete the "
                    "document if it is not wanted."
                )
            if job.finished or time.monotonic() > deadline:
                return job  # not finished: it stops at its owner's next renewal (cancel_requested is set)
            await asyncio.sleep(CANCEL_POLL_SECONDS)

    @staticmethod
    def _refuse_if_too_late(job: Job) -> None:
        if job.finished:
            raise Conflict(f"Ingest job {job.job_id} has already finished ({job.state}).")
        if job.state == JobState.INDEXING:
            raise Conflict(
                f"Ingest job {job.job_id} is already writing its document to the store and will finish in a "
                "moment; delete the document afterwards if it is not wanted."
            )

    # --- the sweep ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the periodic sweep (settles jobs whose process died, purges old records); idempotent,
        needs a running loop. Called on first use, so tools that never touch jobs never start it."""
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_periodically(), name="ingest-job-sweep")

    async def _sweep_periodically(self) -> None:
        last_purge = 0.0
        while True:
            await asyncio.sleep(self.leases.renew)
            try:
                await self.sweep()
                if time.monotonic() - last_purge > PURGE_EVERY_SECONDS:
                    last_purge = time.monotonic()
                    await self.purge()
            except CarragError as exc:
                logger.warning("ingest job sweep failed; next time", extra={"reason": exc.message})
            except Exception:
                logger.exception("ingest job sweep crashed; next time")

    async def sweep(self) -> int:
        """Settle every job whose lease has run out; how many were settled."""
        settled = 0
        for stored in await self.leases.repository.expired(time.time(), SWEEP_BATCH):
            local = self._jobs.get(stored.record["job_id"])
            if local is not None and not local.finished:
                continue  # ours and alive: its renewal is late, not lost
            if (await self.leases.settle(stored)).finished:
                settled += 1
        return settled

    async def purge(self) -> int:
        """Remove finished jobs' records past JOB_TTL_SECONDS and beyond JOB_RETENTION (the sweep does,
        every minute); how many were removed."""
        return await self.leases.repository.purge(
            time.time() - self.settings.job_ttl_seconds, self.settings.job_retention
        )

    # --- shutdown -----------------------------------------------------------------------------------
    def begin_shutdown(self, grace: float) -> None:
        """Stop taking ingests and start draining the jobs (idempotent; needs a running loop)."""
        self.ingestion.stop_accepting()
        if self._drain is None:
            self._drain = asyncio.get_running_loop().create_task(self._drain_jobs(grace), name="ingest-job-drain")

    async def shutdown(self, grace: float) -> None:
        """Refuse new ingests, cancel queued jobs, give running ones ``grace`` seconds, cancel the rest."""
        self.begin_shutdown(grace)
        assert self._drain is not None
        await self._drain
        await self._stop_sweeper()

    async def aclose(self) -> None:
        """Stop the background work and close the repository (running jobs are the caller's: `shutdown`)."""
        await self._stop_sweeper()
        for keeper in list(self._keepers.values()):
            keeper.cancel()
        if self._keepers:
            await asyncio.wait(list(self._keepers.values()))
        self._keepers.clear()
        await self.leases.repository.close()

    async def _stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None

    async def _drain_jobs(self, grace: float) -> None:
        active = [job for job in self._jobs.values() if job.task is not None and not job.finished]
        if not active:
            return
        for job in active:
            if job.state == JobState.QUEUED:
                self._cancel_for_shutdown(job)
        tasks = {job.task for job in active if job.task is not None}
        logger.info("shutting down: waiting for ingest jobs", extra={"jobs": len(tasks), "grace_s": grace})
        pending = tasks
        if grace > 0:
            _, pending = await asyncio.wait(tasks, timeout=grace)
        # A job already writing finishes (the write is atomic and short); the rest roll back.
        late = [job for job in active if job.task in pending and job.state != JobState.INDEXING]
        for job in late:
            self._cancel_for_shutdown(job)
        if late:
            logger.warning("shutdown grace period over: cancelled unfinished ingest jobs", extra={"jobs": len(late)})
        if pending:
            await asyncio.wait(pending)

    @staticmethod
    def _cancel_for_shutdown(job: Job) -> None:
        if job.task is not None and not job.finished:
            job.error = "cancelled: the service shut down"
            job.task.cancel()

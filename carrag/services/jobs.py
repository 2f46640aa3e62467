"""Asynchronous ingestion: ``POST /ingest/...?async=true`` hands the work to a job and answers 202.

A job runs the same pipeline as a synchronous ingest, with the same admission control (the
ingestion service waits for a slot: the job stays ``queued`` meanwhile), and records what the pipeline reports through `IngestObserver`:
its stage, the embedding progress and how long each stage took.

Cancelling a job cancels its asyncio task. The pipeline writes nothing until its final, atomic
``store.write_document`` call, so a job cancelled (or failed) before that leaves nothing behind.
Once that write has begun (state ``indexing``) the job can no longer be cancelled: it finishes.

Jobs live in this process's memory only. A restart forgets the job records, never half a document.
Finished jobs are kept for JOB_TTL_SECONDS, and at most JOB_RETENTION of them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.errors import CarragError, Conflict, DependencyUnavailable, NotFound
from carrag.services.ingestion import IngestionService, IngestObserver, IngestResult
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.telemetry import NullTelemetry, Telemetry
from carrag.services.vocabulary import FINISHED_JOB_STATES, JobKind, JobState

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "Internal error; the service logged it."

Work = Callable[[IngestObserver], Awaitable[IngestResult]]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Progress:
    done: int = 0  # chunks embedded so far (while parsing: PDF pages read by OCR)
    total: int = 0  # chunks to embed, 0 until the embedding stage starts (while parsing: pages to OCR)


@dataclass(eq=False)
class Job:
    job_id: str
    kind: JobKind
    source: str  # the filename or URL
    collection: str = "default"  # the name of the collection it ingests into (API_KEY_SCOPES see jobs by it)
    state: JobState = JobState.QUEUED
    progress: Progress = field(default_factory=Progress)
    timings_ms: dict[str, float] = field(default_factory=dict)
    result: IngestResult | None = None
    error: str | None = None
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    exception: BaseException | None = field(default=None, repr=False)  # why it failed, for the caller
    finished_at: float | None = None  # time.monotonic()
    accepted: bool = False  # survived its first step (a refusal there is the submitter's answer)
    _stage_started: float = field(default_factory=time.perf_counter, repr=False)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_JOB_STATES

    # --- IngestObserver --------------------------------------------------------------------------
    def stage(self, stage: JobState) -> None:
        if stage == JobState.DONE:  # the manager finishes the job once the pipeline has returned
            return
        self._enter(stage)

    def embedded(self, done: int, total: int) -> None:
        self.progress.done, self.progress.total = done, total
        self.updated_at = _now()

    def ocr_read(self, done: int, total: int) -> None:
        self.embedded(done, total)  # the same counter, in the parsing stage

    # --- transitions ---------------------------------------------------------------------------
    def _enter(self, state: JobState) -> None:
        """Close the timing of the current stage and move on to ``state``."""
        now = time.perf_counter()
        self.timings_ms[self.state] = round(
            self.timings_ms.get(self.state, 0.0) + (now - self._stage_started) * 1000, 2
        )
        self._stage_started = now
        self.state = state
        self.updated_at = _now()
        if state in FINISHED_JOB_STATES:
            self.finished_at = time.monotonic()
            self.task = None  # let the task (and the uploaded bytes it holds) go


class JobManager:
    def __init__(self, settings: Settings, ingestion: IngestionService, telemetry: Telemetry | None = None) -> None:
        self.settings = settings
        self.ingestion = ingestion
        self._jobs: OrderedDict[str, Job] = OrderedDict()  # oldest first
        self._drain: asyncio.Task[None] | None = None
        self.telemetry = telemetry or NullTelemetry()
        self.telemetry.watch_jobs(self.counts_by_state)

    # --- submitting ------------------------------------------------------------------------------
    async def submit_file(self, data: bytes, filename: str, options: IngestCommand) -> Job:
        return await self._submit(
            JobKind.FILE, filename, lambda observer: self.ingestion.ingest_file(data, filename, options, observer)
        )

    async def submit_url(self, url: str, options: IngestCommand) -> Job:
        return await self._submit(JobKind.URL, url, lambda observer: self.ingestion.ingest_url(url, options, observer))

    async def _submit(self, kind: JobKind, source: str, work: Work) -> Job:
        self._prune()
        job = Job(job_id=uuid.uuid4().hex, kind=kind, source=source)
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
        job.accepted = True
        if job.finished:  # failed in its first step for a reason that is not the caller's
            self._report(job)
        return job

    async def _run(self, job: Job, work: Work) -> None:
        try:
            result = await work(job)  # waits for an ingestion slot first
        except asyncio.CancelledError:
            job.error = job.error or "cancelled"
            self._finish(job, JobState.CANCELLED)
            raise
        except CarragError as exc:
            job.error, job.exception = exc.message, exc
            self._finish(job, JobState.FAILED)
        except Exception as exc:
            logger.exception("ingest job crashed", extra={"job_id": job.job_id, "source": job.source})
            job.error, job.exception = INTERNAL_ERROR, exc
            self._finish(job, JobState.FAILED)
        else:
            job.result = result
            if result.chunk_count and not job.progress.total:
                job.progress.done = job.progress.total = result.chunk_count  # unchanged: nothing embedded
            self._finish(job, JobState.DONE)

    def _finish(self, job: Job, state: JobState) -> None:
        job._enter(state)
        if job.accepted:
            self._report(job)

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

    # --- reading ----------------------------------------------------------------------------------
    def get(self, job_id: str, principal: Principal = FULL_ACCESS) -> Job:
        """The job, or NotFound (404): also when it ingests into a collection ``principal`` may not read."""
        self._prune()
        job = self._jobs.get(job_id)
        if job is None or not principal.can_read(job.collection):
            raise NotFound(f"No ingest job with id {job_id} (jobs are kept in memory and expire).")
        return job

    def recent(self, limit: int, principal: Principal = FULL_ACCESS) -> list[Job]:
        """Newest first; only the jobs of collections ``principal`` may read."""
        self._prune()
        newest = (job for job in reversed(self._jobs.values()) if principal.can_read(job.collection))
        return [job for job, _ in zip(newest, range(limit), strict=False)]

    def count(self, principal: Principal = FULL_ACCESS) -> int:
        """How many jobs ``principal`` can see."""
        self._prune()
        return sum(1 for job in self._jobs.values() if principal.can_read(job.collection))

    def counts_by_state(self) -> dict[str, int]:
        return dict(Counter(job.state for job in self._jobs.values()))

    def _prune(self) -> None:
        """Drop finished jobs past their TTL, then the oldest finished ones beyond JOB_RETENTION."""
        expired_before = time.monotonic() - self.settings.job_ttl_seconds
        finished = [job for job in self._jobs.values() if job.finished_at is not None]
        for job in finished:
            if job.finished_at < expired_before:  # type: ignore[operator]
                del self._jobs[job.job_id]
        finished = [job for job in self._jobs.values() if job.finished_at is not None]
        for job in finished[: max(0, len(finished) - self.settings.job_retention)]:
            del self._jobs[job.job_id]

    # --- cancelling ---------------------------------------------------------------------------------
    async def cancel(self, job_id: str, principal: Principal = FULL_ACCESS) -> Job:
        """Cancel a job and wait until it has stopped; it leaves nothing in the store."""
        job = self.get(job_id, principal)
        principal.check_write(job.collection)
        if job.finished:
            raise Conflict(f"Ingest job {job_id} has already finished ({job.state}).")
        if job.state == JobState.INDEXING:
            raise Conflict(
                f"Ingest job {job_id} is already writing its document to the store and will finish in a "
                "moment; delete the document afterwards if it is not wanted."
            )
        task = job.task
        assert task is not None
        task.cancel()
        await asyncio.wait({task})
        return job

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

"""An ingest job as the service sees it (`Job`: the running pipeline's `IngestObserver` and its task,
held by the process that runs it) and as it is stored (a JSON-ready record, read back by
`Job.from_record` everywhere else).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from carrag.services.ingestion import IngestResult
from carrag.services.jobs.repository import JobRecord
from carrag.services.sync.report import SyncReport
from carrag.services.vocabulary import FINISHED_JOB_STATES, IngestStatus, JobKind, JobState

INTERNAL_ERROR = "Internal error; the service logged it."


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Progress:
    done: int = (
        0  # chunks embedded so far (while parsing: pages read by OCR, counted as each starts; a sync: sources done)
    )
    total: int = 0  # chunks to embed, 0 until embedding starts (while parsing: pages to OCR; a sync: sources known)


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
    report: SyncReport | None = None  # a sync or crawl job's, filled as it goes
    error: str | None = None
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    owner: str | None = None  # the process running it ("host:pid:nonce")
    lease_expires_at: float | None = None  # epoch seconds; renewed by the owner while it runs
    cancel_requested: bool = False  # set by DELETE /jobs/{id} on any replica; the owner stops at its next renewal
    finished_at: float | None = None  # epoch seconds
    revision: Any = field(default=None, repr=False)  # of the stored record, as last read or written here
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    exception: BaseException | None = field(default=None, repr=False)  # why it failed, for the caller
    accepted: bool = False  # recorded in the store (a refusal in its first step is the submitter's answer)
    stop_as: JobState = field(default=JobState.CANCELLED, repr=False)  # the state a cancelled task ends in
    changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # something to write
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
        self.changed.set()

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
        self.changed.set()
        if state in FINISHED_JOB_STATES:
            self.finished_at = time.time()
            self.lease_expires_at = None
            self.task = None  # let the task (and the uploaded bytes it holds) go

    # --- storage ---------------------------------------------------------------------------------
    def to_record(self) -> JobRecord:
        result = None
        if self.result is not None:
            result = dataclasses.asdict(self.result)
            result["status"] = str(self.result.status)
        return {
            "job_id": self.job_id,
            "kind": str(self.kind),
            "source": self.source,
            "collection": self.collection,
            "state": str(self.state),
            "progress": {"done": self.progress.done, "total": self.progress.total},
            "timings_ms": dict(self.timings_ms),
            "result": result,
            "report": self.report.to_record() if self.report is not None else None,
            "error": self.error,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "owner": self.owner,
            "lease_expires_at": None if self.finished else self.lease_expires_at,
            "cancel_requested": self.cancel_requested,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_record(cls, record: JobRecord, revision: Any = None) -> Job:
        result = record.get("result")
        report = record.get("report")
        return cls(
            job_id=record["job_id"],
            kind=JobKind(record["kind"]),
            source=record["source"],
            collection=record.get("collection", "default"),
            state=JobState(record["state"]),
            progress=Progress(**record["progress"]),
            timings_ms=dict(record["timings_ms"]),
            result=IngestResult(**{**result, "status": IngestStatus(result["status"])}) if result else None,
            report=SyncReport.from_record(report) if report else None,
            error=record.get("error"),
            created_at=datetime.fromisoformat(record["created_at"]),
            updated_at=datetime.fromisoformat(record["updated_at"]),
            owner=record.get("owner"),
            lease_expires_at=record.get("lease_expires_at"),
            cancel_requested=bool(record.get("cancel_requested")),
            finished_at=record.get("finished_at"),
            revision=revision,
            accepted=True,
        )

from __future__ import annotations

from pydantic import Field

from carrag.api.schemas.base import IsoTimestamp, Schema
from carrag.api.schemas.ingest import IngestResponse
from carrag.api.schemas.sync import SyncReportOut
from carrag.services.vocabulary import JobKind, JobState


class JobAccepted(Schema):
    """The 202 answer to ``POST /ingest/file?async=true`` and ``POST /ingest/url?async=true``."""

    job_id: str
    state: JobState = JobState.QUEUED
    status_url: str = Field(description="Poll this (GET) for the job's state; DELETE it to cancel.")


class JobProgress(Schema):
    done: int = Field(
        description="Chunks embedded so far (state `parsing`: pages read by OCR so far, counted as each page "
        "starts, of a PDF or a picture; a sync or crawl: sources done)."
    )
    total: int = Field(
        description="Chunks to embed, 0 until the embedding stage starts (state `parsing`: pages to read by OCR; "
        "a sync or crawl: sources found so far)."
    )


class JobOut(Schema):
    job_id: str
    kind: JobKind
    source: str = Field(description="The uploaded filename or the URL (a sync: the folder; a crawl: its start URL).")
    state: JobState
    progress: JobProgress
    timings_ms: dict[str, float] = Field(description="Milliseconds spent in each state so far.")
    result: IngestResponse | None = Field(None, description="The ingest result, once the job is done.")
    report: SyncReportOut | None = Field(None, description="A sync or crawl job's report, filled as it runs.")
    error: str | None = Field(None, description="Why the job failed (or 'cancelled').")
    cancel_requested: bool = Field(
        False, description="A cancel was asked for; the replica running the job stops it at its next lease renewal."
    )
    created_at: IsoTimestamp
    updated_at: IsoTimestamp


class JobListOut(Schema):
    items: list[JobOut]
    total: int = Field(description="Jobs in the store (running, queued and finished ones not yet expired).")

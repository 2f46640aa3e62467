"""Running a sync or crawl job to its end in tests, and the folder the folder-sync tests change between runs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from carrag.services.jobs import Job, JobManager
from carrag.services.sync.report import SyncReport
from tests.job_helpers import wait_for


async def finished(jobs: JobManager, job: Job) -> Job:
    """The job once it has finished and its final record is stored."""
    await wait_for(lambda: job.finished, timeout=120, what=f"job {job.job_id} to finish")
    deadline = time.monotonic() + 30
    while (stored := await jobs.leases.repository.read(job.job_id)) is None or not stored.record.get("finished_at"):
        assert time.monotonic() < deadline, f"job {job.job_id}'s final record was never stored"
        await asyncio.sleep(0.02)
    return job


def counts(report: SyncReport | None) -> dict[str, int]:
    """The report's counts without the zeros."""
    assert report is not None
    return {outcome: count for outcome, count in report.counts.items() if count}


def outcomes(report: SyncReport | None) -> dict[str, str]:
    """source → outcome of every listed (not unchanged) source."""
    assert report is not None
    return {item.source: str(item.outcome) for item in report.sources}


TOPICS = ["brake fluid", "tyre pressure", "coolant", "spark plugs", "wiper blades", "cabin filter", "battery"]


def note(topic: str, version: int = 1) -> str:
    """A short distinct Markdown note (no two topics or versions share their text)."""
    return (
        f"# {topic.title()}\n\nService note {version} on the {topic}: check the {topic} every "
        f"{version * 5000 + len(topic) * 100} kilometres and write the reading into the log book, page {len(topic)}.\n"
    )


def write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path

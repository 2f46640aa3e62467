from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from carrag.services.container import Container
from carrag.services.errors import Conflict, DependencyUnavailable, NotFound, Overloaded
from carrag.services.jobs import JobManager
from carrag.services.requests import IngestCommand
from tests.conftest import close_container, make_settings, open_container
from tests.job_helpers import long_document, wait_for

NOTE = b"# Notes\n\nThe snapshot retention period is thirty days. Restores need the admin role.\n"
PIPELINE_STATES = ["queued", "parsing", "tagging", "chunking", "embedding", "indexing"]


async def finished(jobs: JobManager, job_id: str) -> None:
    """Until the job has finished and its final record is stored (the record is written just after
    the in-process job says it finished, so a purge right after ``job.finished`` could miss it)."""
    job = await jobs.get(job_id)
    await wait_for(lambda: job.finished, what=f"job {job_id} to finish")
    deadline = time.monotonic() + 30
    while (stored := await jobs.leases.repository.read(job_id)) is None or stored.record.get("finished_at") is None:
        assert time.monotonic() < deadline, f"job {job_id}'s final record was never stored"
        await asyncio.sleep(0.02)


async def test_job_runs_the_pipeline_and_reports_each_stage(container: Container) -> None:
    job = await container.jobs.submit_file(NOTE, "notes.md", IngestCommand(tags=["ops"]))
    await finished(container.jobs, job.job_id)

    assert job.state == "done" and job.error is None
    assert list(job.timings_ms) == PIPELINE_STATES, "every stage was entered, in order, and timed"
    assert all(ms >= 0 for ms in job.timings_ms.values())
    assert job.progress.done == job.progress.total == job.result.chunk_count >= 1
    assert job.result.status == "ingested" and "ops" in job.result.tags
    stored = await container.store.get_document(job.result.document_id)
    assert stored is not None and stored.chunk_count == job.result.chunk_count

    again = await container.jobs.submit_file(NOTE, "notes.md", IngestCommand())
    await finished(container.jobs, again.job_id)
    assert again.result.status == "unchanged" and again.result.document_id == job.result.document_id
    assert [j.job_id for j in await container.jobs.recent(10)] == [again.job_id, job.job_id], "newest first"


async def test_cancel_mid_embedding_leaves_nothing_in_the_store(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, embed_batch_size=8), embedding_backend)
    try:
        job = await container.jobs.submit_file(long_document(600), "big.md", IngestCommand())
        await wait_for(lambda: job.state == "embedding" and job.progress.done >= 8, what="a few embedded batches")
        assert job.progress.done < job.progress.total

        cancelled = await container.jobs.cancel(job.job_id)

        assert cancelled is job and job.state == "cancelled" and job.error == "cancelled"
        assert job.result is None and "embedding" in job.timings_ms
        assert await container.store.count_chunks() == 0
        assert (await container.store.list_documents(offset=0, limit=10)).total == 0
        assert await container.store.find_by_source("big.md") is None
        with pytest.raises(Conflict, match="already finished"):
            await container.jobs.cancel(job.job_id)
    finally:
        await close_container(container)


async def test_a_failing_job_records_why(container: Container) -> None:
    job = await container.jobs.submit_file(b"%PDF-1.7 this is not really a PDF", "broken.pdf", IngestCommand())
    await finished(container.jobs, job.job_id)
    assert job.state == "failed" and job.result is None
    assert "broken.pdf" in job.error
    assert await container.store.count_chunks() == 0


async def test_jobs_respect_ingest_admission_control(tmp_path: Path, embedding_backend) -> None:
    settings = make_settings(tmp_path, max_concurrent_ingests=1, ingest_queue_size=1, embed_batch_size=8)
    container = await open_container(settings, embedding_backend)
    try:
        running = await container.jobs.submit_file(long_document(300), "big.md", IngestCommand())
        waiting = await container.jobs.submit_file(NOTE, "notes.md", IngestCommand())
        assert running.state not in ("queued", "done") and waiting.state == "queued", "one slot: the second waits"

        with pytest.raises(Overloaded, match="retry shortly"):
            await container.jobs.submit_file(NOTE, "other.md", IngestCommand())
        assert {job.job_id for job in await container.jobs.recent(10)} == {running.job_id, waiting.job_id}, (
            "a refused submission leaves no job behind"
        )

        await container.jobs.cancel(waiting.job_id)
        assert waiting.state == "cancelled" and list(waiting.timings_ms) == ["queued"]
        await container.jobs.cancel(running.job_id)
    finally:
        await close_container(container)


async def test_finished_jobs_are_bounded_and_expire(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, job_retention=2), embedding_backend)
    try:
        ids = []
        for number in range(3):
            job = await container.jobs.submit_file(NOTE + str(number).encode(), f"n{number}.md", IngestCommand())
            await finished(container.jobs, job.job_id)
            ids.append(job.job_id)
        await container.jobs.purge()  # the sweep's work, every minute
        assert [job.job_id for job in await container.jobs.recent(10)] == [ids[2], ids[1]], "oldest finished dropped"
        assert await container.jobs.total() == 2
        with pytest.raises(NotFound):
            await container.jobs.get(ids[0])

        container.settings.job_ttl_seconds = 0.05
        await asyncio.sleep(0.1)
        assert await container.jobs.recent(10) == [], "expired jobs are not listed, even before the purge"
        assert await container.jobs.purge() == 2 and await container.jobs.total() == 0
    finally:
        await close_container(container)


async def test_shutdown_lets_running_jobs_finish_and_refuses_new_ones(container: Container) -> None:
    job = await container.jobs.submit_file(long_document(20), "medium.md", IngestCommand())
    await wait_for(lambda: job.state != "queued", what="the job to start")

    await container.jobs.shutdown(grace=60)

    assert job.state == "done"
    assert await container.store.find_by_source("medium.md") is not None
    with pytest.raises(DependencyUnavailable, match="shutting down"):
        await container.jobs.submit_file(NOTE, "late.md", IngestCommand())
    with pytest.raises(DependencyUnavailable, match="shutting down"):
        async with container.ingestion.slot():
            pass


async def test_a_job_submitted_as_shutdown_begins_is_refused_not_left_queued(container: Container) -> None:
    """No await between the two calls: the drain has not run yet when the job is submitted (an
    in-process request does not yield on its way from the ASGI call to the job manager)."""
    container.jobs.begin_shutdown(grace=0)
    with pytest.raises(DependencyUnavailable, match="shutting down"):
        await container.jobs.submit_file(NOTE, "late.md", IngestCommand())
    assert await container.jobs.total() == 0 and container.jobs.counts_by_state() == {}
    await container.jobs.shutdown(grace=0)


async def test_shutdown_cancels_what_outlives_the_grace_period(tmp_path: Path, embedding_backend) -> None:
    settings = make_settings(tmp_path, max_concurrent_ingests=1, embed_batch_size=8)
    container = await open_container(settings, embedding_backend)
    try:
        running = await container.jobs.submit_file(long_document(600), "big.md", IngestCommand())
        queued = await container.jobs.submit_file(NOTE, "notes.md", IngestCommand())
        await wait_for(lambda: running.state == "embedding", what="embedding to start")

        await container.jobs.shutdown(grace=0.2)

        assert running.state == "cancelled" and queued.state == "cancelled"
        assert await container.store.count_chunks() == 0
        assert (await container.store.list_documents(offset=0, limit=10)).total == 0
    finally:
        await close_container(container)

"""Leases and cross-process cancels (carrag/services/jobs/leases.py), on the SQLite job table: a second
`JobManager` on the same file stands for another replica (the SQLite store itself is one process per
file; Elasticsearch replicas are tested in tests/api/test_elasticsearch_job_replicas.py)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from carrag.services.container import Container
from carrag.services.errors import Conflict, DependencyUnavailable
from carrag.services.jobs import JobManager
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.stores.sqlite_jobs import SqliteJobRepository
from tests.conftest import close_container, make_settings, open_container
from tests.job_helpers import long_document, wait_for

NOTE = b"# Notes\n\nThe snapshot retention period is thirty days. Restores need the admin role.\n"
# The owner renews every 0.2 s (plus PROGRESS_WRITE_INTERVAL and the write): a lease of 1 s ran out
# whenever the loop stalled ~0.5 s on a busy machine, and the other replica then settled the running job
# as failed. 5 s keeps renewals quick and the lease out of reach of a stall; the tests of expiry give
# their records their own `lease_expires_at`.
LEASES = {"job_lease_seconds": 5.0, "job_lease_renew_seconds": 0.2}


@pytest.fixture
def lease_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path, embed_batch_size=8, **LEASES)


@pytest.fixture
async def replica_a(lease_settings: Settings, embedding_backend) -> AsyncIterator[Container]:
    container = await open_container(lease_settings, embedding_backend)
    yield container
    await container.jobs.shutdown(grace=0)
    await close_container(container)


@pytest.fixture
async def replica_b(lease_settings: Settings, replica_a: Container) -> AsyncIterator[JobManager]:
    """Another process's job manager: the same job table, no jobs of its own."""
    manager = JobManager(
        lease_settings, replica_a.ingestion, repository=SqliteJobRepository(lease_settings.resolved_sqlite_path)
    )
    yield manager
    await manager.aclose()


def dead_job(state: str = "embedding", expires_in: float = -1.0, **fields: object) -> dict:
    """The record a process left behind when it was killed."""
    now = time.time()
    stamp = "2026-11-23T12:00:00+00:00"
    return {
        "job_id": uuid.uuid4().hex,
        "kind": "file",
        "source": "lost.md",
        "state": state,
        "progress": {"done": 8, "total": 40},
        "timings_ms": {"queued": 1.0, "parsing": 2.0},
        "result": None,
        "error": None,
        "created_at": stamp,
        "updated_at": stamp,
        "owner": "elsewhere:4242:dead00",
        "lease_expires_at": now + expires_in,
        "cancel_requested": False,
        "finished_at": None,
        **fields,
    }


async def test_another_replica_sees_the_job_progress_and_finish(replica_a: Container, replica_b: JobManager) -> None:
    job = await replica_a.jobs.submit_file(long_document(60), "medium.md", IngestCommand())
    seen: set[str] = set()
    deadline = time.monotonic() + 120
    while True:
        remote = await replica_b.get(job.job_id)
        seen.add(remote.state)
        if remote.finished:
            break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert remote.state == "done" and remote.result is not None
    assert remote.result.document_id == job.result.document_id  # type: ignore[union-attr]
    assert remote.progress.done == remote.progress.total == remote.result.chunk_count
    assert len(seen) >= 2, f"progress reached the other replica while it ran: {seen}"
    assert [j.job_id for j in await replica_b.recent(5)] == [job.job_id]


async def test_cancel_from_another_replica_stops_the_job_and_leaves_nothing(
    replica_a: Container, replica_b: JobManager
) -> None:
    job = await replica_a.jobs.submit_file(long_document(600), "big.md", IngestCommand())
    await wait_for(lambda: job.state == "embedding" and job.progress.done >= 8, what="a few embedded batches")

    cancelled = await replica_b.cancel(job.job_id)

    assert cancelled.state == "cancelled" and cancelled.error == "cancelled" and cancelled.cancel_requested
    assert job.state == "cancelled", "the replica running it stopped it"
    assert await replica_a.store.count_chunks() == 0
    assert await replica_a.store.find_by_source("big.md") is None
    with pytest.raises(Conflict, match="already finished"):
        await replica_b.cancel(job.job_id)


async def test_a_job_whose_process_died_is_failed_once_its_lease_runs_out(replica_b: JobManager) -> None:
    record = dead_job(expires_in=1.5)  # room for a stall before the first read on a busy machine
    await replica_b.repository.create(record)

    assert (await replica_b.get(record["job_id"])).state == "embedding", "the lease has not run out yet"
    await asyncio.sleep(1.6)
    readers = await asyncio.gather(*(replica_b.get(record["job_id"]) for _ in range(4)))

    assert {job.state for job in readers} == {"failed"}
    assert len({job.error for job in readers}) == 1, "one verdict, however many readers settle it at once"
    assert "elsewhere:4242:dead00" in readers[0].error and "lease expired" in readers[0].error
    assert "nothing of it was stored" in readers[0].error
    stored = await replica_b.repository.read(record["job_id"])
    assert stored is not None and stored.record["state"] == "failed" and stored.record["lease_expires_at"] is None


async def test_dying_while_indexing_says_what_the_store_may_hold(replica_b: JobManager) -> None:
    record = dead_job("indexing")
    await replica_b.repository.create(record)
    job = await replica_b.get(record["job_id"])
    assert job.state == "failed" and "either the whole new version or none of it" in job.error


async def test_a_cancel_asked_of_a_dead_process_ends_cancelled(replica_b: JobManager) -> None:
    record = dead_job(cancel_requested=True)
    await replica_b.repository.create(record)
    job = await replica_b.get(record["job_id"])
    assert job.state == "cancelled" and job.error.startswith("cancelled: its process")


async def test_the_sweep_settles_expired_jobs_nobody_reads(replica_b: JobManager) -> None:
    expired, alive = dead_job(), dead_job(expires_in=60)
    for record in (expired, alive):
        await replica_b.repository.create(record)
    assert await replica_b.sweep() == 1
    assert (await replica_b.repository.read(expired["job_id"])).record["state"] == "failed"  # type: ignore[union-attr]
    assert (await replica_b.repository.read(alive["job_id"])).record["state"] == "embedding"  # type: ignore[union-attr]


async def test_a_stalled_owner_that_lost_its_lease_stops_its_job(replica_a: Container) -> None:
    """Someone settled the job as failed (the owner did not renew in time): the owner, at its next
    renewal, finds the verdict, stops the work and leaves the verdict standing."""
    job = await replica_a.jobs.submit_file(long_document(600), "big.md", IngestCommand())
    await wait_for(lambda: job.state == "embedding", what="embedding to start")
    repository = replica_a.jobs.repository
    stored = await repository.read(job.job_id)
    assert stored is not None
    verdict = {**stored.record, "state": "failed", "error": "its process stopped (test)", "lease_expires_at": None}
    while await repository.update(verdict, stored.revision) is None:  # the owner renewed meanwhile: again
        stored = await repository.read(job.job_id)
        assert stored is not None

    await wait_for(lambda: job.finished, what="the owner to stop the job")
    assert job.state == "failed" and job.error == "its process stopped (test)"
    assert await replica_a.store.count_chunks() == 0


async def test_jobs_survive_a_restart(tmp_path: Path, embedding_backend) -> None:
    settings = make_settings(tmp_path, **LEASES)
    first = await open_container(settings, embedding_backend)
    job = await first.jobs.submit_file(NOTE, "notes.md", IngestCommand())
    await wait_for(lambda: job.finished, what="the job to finish")
    interrupted = dead_job(owner=f"{first.jobs.owner}", expires_in=0.3)  # as if it ran when the process died
    await first.jobs.repository.create(interrupted)
    await first.jobs.shutdown(grace=0)
    await close_container(first)

    second = await open_container(settings, embedding_backend)
    try:
        again = await second.jobs.get(job.job_id)
        assert again.state == "done" and again.result is not None
        assert again.result.document_id == job.result.document_id  # type: ignore[union-attr]
        await asyncio.sleep(0.4)
        assert (await second.jobs.get(interrupted["job_id"])).state == "failed", "not resumed: failed by its lease"
        assert {j.job_id for j in await second.jobs.recent(10)} == {job.job_id, interrupted["job_id"]}
    finally:
        await close_container(second)


async def test_a_second_process_on_the_file_records_no_jobs_in_it(replica_a: Container, embedding_backend) -> None:
    """The store refuses a second process (process_lock.py); its job records are refused with it
    rather than written into a file it does not own."""
    second = await open_container(replica_a.settings, embedding_backend)
    try:
        assert "already open in another Carrag process" in second.startup_errors["store"]
        with pytest.raises(DependencyUnavailable, match="already open in another Carrag process"):
            await second.jobs.submit_file(NOTE, "notes.md", IngestCommand())
        assert await replica_a.jobs.total() == 0
    finally:
        await close_container(second)

"""The `JobRepository` contract (carrag/services/jobs/repository.py), run against every adapter: in
memory, the SQLite table, and the Elasticsearch index on the session's real node. Two handles on one
location stand for two processes (on SQLite: a restart; on Elasticsearch: two replicas)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from carrag.services.jobs.leases import Leases
from carrag.services.jobs.repository import InMemoryJobRepository, JobRecord, JobRepository
from carrag.services.stores.elasticsearch.connection import Connection
from carrag.services.stores.elasticsearch.jobs import ElasticsearchJobRepository, jobs_index_name
from carrag.services.stores.sqlite_jobs import SqliteJobRepository
from tests.conftest import es_index_name

BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("elasticsearch", id="elasticsearch", marks=pytest.mark.elasticsearch),
]
BASE = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def record(number: int, state: str = "embedding", **fields: Any) -> JobRecord:
    created = (BASE + timedelta(seconds=number)).isoformat()
    values: JobRecord = {
        "job_id": f"job-{number:03d}-{uuid.uuid4().hex[:6]}",
        "kind": "file",
        "source": f"doc{number}.md",
        "state": state,
        "progress": {"done": 0, "total": 0},
        "timings_ms": {},
        "result": None,
        "error": None,
        "created_at": created,
        "updated_at": created,
        "owner": "host:1:abc",
        "lease_expires_at": time.time() + 60,
        "cancel_requested": False,
        "finished_at": None,
    }
    if state in ("done", "failed", "cancelled"):
        values.update(lease_expires_at=None, finished_at=time.time())
    values.update(fields)
    return values


Opener = Callable[[], JobRepository]


@pytest.fixture(params=BACKENDS)
async def open_repository(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Opener]:
    """Opens handles on one fresh location; a second handle sees what the first wrote."""
    opened: list[JobRepository] = []
    connections: list[Connection] = []
    shared = InMemoryJobRepository()
    alias = es_index_name("carrag_jobs_test")

    def opener() -> JobRepository:
        repository: JobRepository
        if request.param == "memory":
            repository = shared
        elif request.param == "sqlite":
            repository = SqliteJobRepository(tmp_path / "carrag.db")
        else:
            connection = Connection(request.getfixturevalue("es_url"))
            connections.append(connection)
            repository = ElasticsearchJobRepository(connection, alias)
        opened.append(repository)
        return repository

    yield opener
    for repository in opened:
        await repository.close()
    if connections:
        await connections[0].client.indices.delete(index=jobs_index_name(alias), ignore_unavailable=True)
    for connection in connections:
        await connection.close()


async def eventually(check: Callable[[], Any], timeout: float = 5.0) -> None:
    """Listings on Elasticsearch see a write after a refresh (1 s by default)."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "the listing never caught up"
        await asyncio.sleep(0.1)


async def test_records_round_trip_and_updates_are_conditional(open_repository: Opener) -> None:
    repository = open_repository()
    job = record(1)
    revision = await repository.create(job)

    stored = await repository.read(job["job_id"])
    assert stored is not None and stored.record == job and stored.revision == revision
    assert await repository.read("no-such-job") is None

    moved = {**job, "state": "indexing", "progress": {"done": 4, "total": 4}}
    newer = await repository.update(moved, revision)
    assert newer is not None and newer != revision
    assert (await repository.read(job["job_id"])).record == moved  # type: ignore[union-attr]

    assert await repository.update({**job, "state": "failed"}, revision) is None, "a stale revision is refused"
    assert (await repository.read(job["job_id"])).record["state"] == "indexing"  # type: ignore[union-attr]

    await repository.delete(job["job_id"])
    assert await repository.read(job["job_id"]) is None
    assert await repository.update(moved, newer) is None, "a vanished record cannot be updated"


async def test_creating_an_id_that_exists_is_refused_and_leases_claim_it_only_when_free(
    open_repository: Opener,
) -> None:
    """A sync's job id names its folder: a second create is refused (None), and `Leases.claim` takes the id
    over only from a finished job or one whose lease ran out, on whichever handle (replica) asks."""
    first, second = open_repository(), open_repository()
    running = record(1)
    assert await first.create(running) is not None
    assert await second.create({**running, "source": "another"}) is None
    assert (await first.read(running["job_id"])).record == running  # type: ignore[union-attr]

    leases = Leases(second, lease=15, renew=5)
    assert await leases.claim({**running, "owner": "host:2:def"}) is None, "still running: refused"
    stored = await first.read(running["job_id"])
    assert stored is not None
    await first.update({**running, "lease_expires_at": time.time() - 1}, stored.revision)  # its process died
    assert await leases.claim({**running, "owner": "host:2:def"}) is not None
    assert (await first.read(running["job_id"])).record["owner"] == "host:2:def"  # type: ignore[union-attr]

    done = record(2, state="done")
    await first.create(done)
    assert await leases.claim({**done, "state": "queued", "finished_at": None}) is not None, "finished: free"


async def test_two_handles_racing_on_one_revision_one_wins(open_repository: Opener) -> None:
    """An owner renewing its lease and another replica recording a cancel, at the same moment."""
    owner, other = open_repository(), open_repository()
    job = record(1)
    revision = await owner.create(job)
    read_by_other = await other.read(job["job_id"])
    assert read_by_other is not None and read_by_other.revision == revision

    outcomes = await asyncio.gather(
        owner.update({**job, "progress": {"done": 8, "total": 40}}, revision),
        other.update({**job, "cancel_requested": True}, read_by_other.revision),
    )
    assert sum(outcome is not None for outcome in outcomes) == 1, outcomes
    final = await owner.read(job["job_id"])
    winner = 0 if outcomes[0] is not None else 1
    assert final is not None and final.revision == outcomes[winner]
    assert final.record["cancel_requested"] is (winner == 1)


async def test_a_second_handle_reads_what_the_first_wrote(open_repository: Opener) -> None:
    """On SQLite this is the restart: a new connection on the same file."""
    first = open_repository()
    job = record(1, "done", result={"document_id": "d1"})
    await first.create(job)
    await first.close()

    second = open_repository()
    stored = await second.read(job["job_id"])
    assert stored is not None and stored.record == job


async def test_recent_lists_newest_first_and_counts(open_repository: Opener) -> None:
    repository = open_repository()
    jobs = [record(number) for number in (2, 0, 3, 1)]
    for job in jobs:
        await repository.create(job)
    newest_first = [job["job_id"] for job in sorted(jobs, key=lambda job: job["created_at"], reverse=True)]

    async def listed() -> bool:
        return [stored.record["job_id"] for stored in await repository.recent(3)] == newest_first[:3]

    await eventually(listed)
    assert await repository.count() == 4


async def test_expired_finds_unfinished_jobs_whose_lease_ran_out(open_repository: Opener) -> None:
    repository = open_repository()
    now = time.time()
    dead = record(1, "embedding", lease_expires_at=now - 5)
    alive = record(2, "parsing", lease_expires_at=now + 30)
    finished = record(3, "done")
    for job in (dead, alive, finished):
        await repository.create(job)

    async def only_the_dead_one() -> bool:
        return [stored.record["job_id"] for stored in await repository.expired(now, 10)] == [dead["job_id"]]

    await eventually(only_the_dead_one)


async def test_purge_removes_expired_and_beyond_retention(open_repository: Opener) -> None:
    repository = open_repository()
    now = time.time()
    old = record(1, "done", finished_at=now - 3600)
    kept = [record(number, "done", finished_at=now - 10 + number) for number in (2, 3, 4)]
    running = record(5, "embedding")
    for job in (old, *kept, running):
        await repository.create(job)

    async def purged() -> bool:
        await repository.purge(finished_before=now - 60, keep=2)
        return await repository.count() == 3

    await eventually(purged)
    remaining = {job["job_id"] for job in (kept[1], kept[2], running)}
    assert {stored.record["job_id"] for stored in await repository.recent(10)} <= remaining
    for job_id in remaining:
        assert await repository.read(job_id) is not None, "the newest finished and every unfinished job stay"

"""Ingest-job records (`JobRepository`): one document per job in ``<alias>_jobs``, shared by every API
replica. Reads are real-time gets (listings search for ids, then get them); updates are conditional on
``if_seq_no``/``if_primary_term``, so the loser of a race re-reads and decides again (`jobs/leases.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from carrag.services.jobs.repository import FINISHED_STATE_VALUES, JobRecord, StoredJob
from carrag.services.stores.elasticsearch.connection import PAGE, Connection, IndexMissing
from carrag.services.stores.elasticsearch.mapping import MAPPINGS
from carrag.services.stores.elasticsearch.queries import MAX_RESULT_WINDOW


def jobs_index_name(alias: str) -> str:
    return f"{alias}_jobs"


class ElasticsearchJobRepository:
    def __init__(self, connection: Connection, alias: str, *, shards: int = 1, replicas: int = 0) -> None:
        self.connection = connection
        self.index = jobs_index_name(alias)
        self.shards = shards
        self.replicas = replicas
        self._ready = False

    async def _call(self, action: str, call: Callable[[], Awaitable[Any]], *, conditional: bool = False) -> Any:
        """Run ``call``; ``conditional``: a write that answers None when the record changed or is gone."""
        if not self._ready:
            settings = {"number_of_shards": self.shards, "number_of_replicas": self.replicas}
            await self.connection.create_index(
                "creating the jobs index", self.index, mappings=MAPPINGS["jobs"], settings=settings
            )
            self._ready = True
        try:
            if conditional:
                return await self.connection.conditionally(action, self.index, call())
            with self.connection.errors(action, self.index):
                return await call()
        except IndexMissing:
            self._ready = False  # deleted by someone (a test, an operator): set up again next time
            raise

    async def create(self, record: JobRecord) -> Any | None:
        writer = self.connection.writer
        create = lambda: writer.create(index=self.index, id=record["job_id"], document=record)  # noqa: E731
        return _revision(await self._call("recording an ingest job", create, conditional=True))

    async def read(self, job_id: str) -> StoredJob | None:
        get = lambda: self.connection.get("reading an ingest job", self.index, job_id)  # noqa: E731
        response = await self._call("reading an ingest job", get)
        return StoredJob(response["_source"], _revision(response)) if response is not None else None

    async def _read_many(self, ids: list[str]) -> list[StoredJob]:
        if not ids:
            return []
        found = await self._call(
            "reading ingest jobs", lambda: self.connection.found("reading ingest jobs", self.index, ids=ids)
        )
        return [StoredJob(doc["_source"], _revision(doc)) for doc in found]

    async def update(self, record: JobRecord, revision: Any) -> Any | None:
        seq_no, primary_term = revision
        writer = self.connection.writer
        index = lambda: writer.index(  # noqa: E731
            index=self.index, id=record["job_id"], document=record, if_seq_no=seq_no, if_primary_term=primary_term
        )
        return _revision(await self._call("updating an ingest job", index, conditional=True))

    async def delete(self, job_id: str) -> None:
        delete = lambda: self.connection.writer.delete(index=self.index, id=job_id)  # noqa: E731
        await self._call("deleting an ingest job", delete, conditional=True)  # None: already gone

    async def _ids(self, action: str, **request: Any) -> list[str]:
        response = await self._call(action, lambda: self.connection.client.search(index=self.index, **request))
        return [hit["_id"] for hit in response["hits"]["hits"]]

    async def recent(self, limit: int) -> list[StoredJob]:
        ids = await self._ids(
            "listing ingest jobs", sort=[{"created_at": "desc"}], size=limit, source=False, track_total_hits=False
        )
        return await self._read_many(ids)

    async def count(self) -> int:
        response = await self._call("counting ingest jobs", lambda: self.connection.client.count(index=self.index))
        return int(response["count"])

    async def expired(self, now: float, limit: int) -> list[StoredJob]:
        ids = await self._ids(
            "finding ingest jobs whose lease expired",
            query={
                "bool": {
                    "must_not": [{"terms": {"state": FINISHED_STATE_VALUES}}],
                    "filter": [{"range": {"lease_expires_at": {"lt": now}}}],
                }
            },
            size=min(limit, PAGE),
            source=False,
        )
        return await self._read_many(ids)  # real time: some may have moved on since the search's refresh

    async def purge(self, finished_before: float, keep: int) -> int:
        beyond = []
        if keep + PAGE <= MAX_RESULT_WINDOW:
            beyond = await self._ids(
                "finding old ingest jobs",
                query={"exists": {"field": "finished_at"}},
                sort=[{"finished_at": "desc"}],
                from_=keep,
                size=PAGE,
                source=False,
            )
        query: dict[str, Any] = {"range": {"finished_at": {"lt": finished_before}}}
        if beyond:
            query = {"bool": {"should": [query, {"ids": {"values": beyond}}], "minimum_should_match": 1}}
        response = await self._call(
            "removing old ingest jobs",
            lambda: self.connection.writer.delete_by_query(index=self.index, query=query, conflicts="proceed"),
        )
        return int(response.get("deleted", 0))

    async def close(self) -> None:
        pass  # the store owns the connection


def _revision(response: Any) -> tuple[int, int] | None:
    """A record's concurrency token (``_seq_no``, ``_primary_term``) as an answer gives it."""
    return (response["_seq_no"], response["_primary_term"]) if response is not None else None

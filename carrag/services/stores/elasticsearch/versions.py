"""The visibility protocol, writer's side: how a document version becomes visible, is replaced and is
deleted, correctly with any number of writing processes, shards and replicas, and without locks.
The reader's side is `live_filter.py`; docs/architecture.md has the argument in full.

Every write creates a new *version* (its ``document_id``): its chunks and a version record. A
version is live exactly while its source's record (one per collection and ``source_id``, `mapping.py`)
names it. Writing a batch of versions (`write`):

1. Index every chunk and version record with ``refresh=wait_for``: when Elasticsearch answers,
   the chunks are searchable on every shard copy, yet no reader returns them (no record names them).
   An item that fails fails its version: what was written of it is deleted, the source is untouched.
2. Flip each source record to its new version, conditionally: ``if_seq_no``/``if_primary_term`` of
   the record as read, or ``create`` when there was none. A flip happens whole (one document) or not
   at all; on a conflict (another process flipped or deleted the record since it was read) the
   record is read again and the flip retried, so the last flip wins and one version survives.
3. Delete the replaced version: its original, its chunks, its version record (ids are derived, no
   search needed; readers already drop it, so no refresh either).

Deleting (`delete`) removes the source record conditionally in the same way, then the chunks.
Kept originals (`originals.py`) ride along, keyed by the version's id: written after step 1 (a
failure fails the version), removed before the version record, so what a failed removal leaves is
found by the sweep (`sweep.py`). A crash leaves a version no record names (invisible) or a replaced
one (dropped by readers); the sweep removes both once older than ``abandoned_after``. A writer gives up
a flip after half of that, so the sweep never removes a version that could still become live.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from elasticsearch import NotFoundError

from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.ids import chunk_id
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, OriginalFile
from carrag.services.stores.elasticsearch.connection import (
    BulkItem,
    Connection,
    bulk_failure,
    failures_by_owner,
)
from carrag.services.stores.elasticsearch.mapping import (
    chunk_source,
    document_key,
    neighbours_of,
    record_key,
    source_record,
    source_record_id,
    to_document,
    version_ids,
    version_record,
    version_record_id,
)
from carrag.services.stores.elasticsearch.originals import OriginalsIndex, part_count

logger = logging.getLogger(__name__)

BULK_MAX_OPS = 1000  # chunks per bulk request; a larger write is split into requests sent together
FLIP_UNKNOWN = 0  # a flip's bulk status when the request failed: it may or may not have been applied
FLIP_ATTEMPTS = 50  # conflicting flips retried (each retry means another process flipped meanwhile)
Operation = tuple[dict[str, Any], dict[str, Any] | None]  # a bulk action line and its source


@dataclass(slots=True, frozen=True)
class SourceState:
    """A source's record as read: the live version and the record's concurrency token."""

    document: DocumentRecord
    seq_no: int
    primary_term: int


@dataclass(slots=True)
class PendingWrite:
    document: DocumentRecord
    chunks: list[Chunk]
    matrix: np.ndarray
    identity: EmbeddingIdentity
    future: asyncio.Future[str | None] | None = field(default=None, repr=False)
    original: OriginalFile | None = field(default=None, repr=False)


class Versions:
    def __init__(
        self,
        connection: Connection,
        alias: str,
        *,
        refresh: str = "wait_for",
        abandoned_after: float = 600.0,
        require_alias: bool = True,
        originals: OriginalsIndex | None = None,
    ) -> None:
        self.connection = connection
        self.originals = originals  # None: originals are not this instance's business (reindex's copy)
        self.alias = alias  # or a concrete index, with require_alias=False (reindex)
        self.require_alias = require_alias
        self.refresh = refresh
        self.abandoned_after = abandoned_after

    # --- writing -------------------------------------------------------------------------------------
    async def write(self, items: list[PendingWrite]) -> list[str | BaseException | None]:
        """Write and publish every item's version; each item's outcome (replaced id, or the error)."""
        outcomes: list[str | BaseException | None] = [None] * len(items)
        started = time.monotonic()
        written = await self._write_versions(items, outcomes)
        written = await self._write_originals(items, written, outcomes)
        if written:
            await self._remove_replaced(await self._flip(items, written, outcomes, started))
        return outcomes

    async def _write_versions(self, items: list[PendingWrite], outcomes: list[Any]) -> list[int]:
        """Step 1; returns the positions of the items whose versions were written whole."""
        written_at = datetime.now(UTC).isoformat()
        operations: list[Operation] = []
        owners: list[int] = []
        for position, item in enumerate(items):
            document = item.document
            for chunk, vector in zip(item.chunks, item.matrix, strict=True):
                operations.append(
                    (
                        {"index": {"_id": chunk_id(document.document_id, chunk.chunk_index)}},
                        chunk_source(document, chunk, vector, neighbours_of(item.chunks, chunk)),
                    )
                )
                owners.append(position)
            operations.append(
                (
                    {"index": {"_id": version_record_id(document.document_id)}},
                    version_record(document, len(item.chunks), written_at),
                )
            )
            owners.append(position)
        action = "indexing " + (items[0].document.filename if len(items) == 1 else f"{len(items)} documents")
        try:
            results = await self._bulk_in_parts(operations, action)
        except CarragError as exc:
            for position in range(len(items)):
                outcomes[position] = exc
            await self._roll_back([items[p] for p in range(len(items))])
            return []
        failures = failures_by_owner(owners, results)
        for position, failed in failures.items():
            item = items[position]
            outcomes[position] = bulk_failure(
                failed,
                len(item.chunks) + 1,
                f"indexing {item.document.filename}",
                "; nothing of the document was stored",
            )
        await self._roll_back([items[p] for p in failures])
        return [position for position in range(len(items)) if position not in failures]

    async def _write_originals(self, items: list[PendingWrite], written: list[int], outcomes: list[Any]) -> list[int]:
        """Step 1b: the kept originals of the written versions; a version whose original fails is
        rolled back. Returns the positions still to publish."""
        with_original = [p for p in written if items[p].original is not None]
        if self.originals is None or not with_original:
            return written
        errors = await self.originals.write(
            [(items[p].document.document_id, items[p].original) for p in with_original]  # type: ignore[misc]
        )
        failed = [p for p in with_original if items[p].document.document_id in errors]
        for position in failed:
            outcomes[position] = errors[items[position].document.document_id]
        await self._roll_back([items[p] for p in failed])
        return [p for p in written if p not in failed]

    async def _bulk_in_parts(
        self, operations: list[Operation], action: str, refresh: str | bool | None = None
    ) -> list[BulkItem]:
        """``operations`` in requests of ``BULK_MAX_OPS``, sent together; ``refresh``: the writes' own."""
        refresh = self.refresh if refresh is None else refresh
        parts = [operations[low : low + BULK_MAX_OPS] for low in range(0, len(operations), BULK_MAX_OPS)]
        bulk = self.connection.bulk
        answers = await asyncio.gather(
            *(
                bulk(part, index=self.alias, action=action, refresh=refresh, require_alias=self.require_alias)
                for part in parts
            )
        )
        return [item for answer in answers for item in answer]

    async def _flip(
        self, items: list[PendingWrite], positions: list[int], outcomes: list[Any], started: float
    ) -> list[tuple[str, int, set[str]]]:
        """Step 2; returns the replaced versions as (document_id, chunk_count, ids the new version reuses)."""
        superseded: list[tuple[str, int, set[str]]] = []
        todo = list(positions)
        # A 409 may answer the client's own retry of a flip that was applied but whose answer was lost:
        # such a version may be live, so it is never rolled back (the sweep decides, by the record).
        conflicted: set[int] = set()
        for _ in range(FLIP_ATTEMPTS):
            if not todo:
                break
            if time.monotonic() - started > self.abandoned_after / 2:
                break  # too late: `sweep` may consider this version abandoned
            this_round: dict[str, int] = {}  # one flip per source per round
            deferred = []
            for position in todo:
                source = document_key(items[position].document)
                if source in this_round:
                    deferred.append(position)
                else:
                    this_round[source] = position
            states = await self._states_or_fail(items, this_round, outcomes, conflicted)
            operations: list[Operation] = []
            flipping: list[tuple[int, SourceState | None]] = []
            for source, position in this_round.items():
                if isinstance(outcomes[position], BaseException):
                    continue
                item = items[position]
                state = states.get(source)
                target: dict[str, Any] = {"_id": source_record_id(source)}
                if state is None:
                    line = {"create": target}
                else:
                    line = {"index": {**target, "if_seq_no": state.seq_no, "if_primary_term": state.primary_term}}
                operations.append((line, source_record(item.document, len(item.chunks))))
                flipping.append((position, state))
            results = await self._flip_bulk(operations, flipping, outcomes)
            retry = []
            for (position, state), result in zip(flipping, results, strict=True):
                item = items[position]
                if result.ok:
                    new_id = item.document.document_id
                    if state is not None:
                        old = state.document
                        outcomes[position] = old.document_id if old.document_id != new_id else None
                        reused = set(version_ids(new_id, len(item.chunks))) if old.document_id == new_id else set()
                        superseded.append((old.document_id, old.chunk_count, reused))
                elif result.conflict:
                    conflicted.add(position)
                    retry.append(position)
                elif result.status == FLIP_UNKNOWN:
                    pass  # the flip may have happened: no roll back; the error is reported, the sweep decides
                else:
                    outcomes[position] = bulk_failure(
                        [result], 1, f"publishing {item.document.filename}", "; nothing of the document was stored"
                    )
                    await self._roll_back([item])
            todo = deferred + retry
        if todo:
            for position in todo:
                outcomes[position] = DependencyUnavailable(
                    "store", "Elasticsearch kept changing the document's source record; nothing was stored, retry"
                )
            await self._roll_back([items[p] for p in todo if p not in conflicted])
        return superseded

    async def _states_or_fail(
        self, items: list[PendingWrite], this_round: dict[str, int], outcomes: list[Any], conflicted: set[int]
    ) -> dict[str, SourceState]:
        try:
            return await self.source_states(list(this_round))
        except CarragError as exc:
            for position in this_round.values():
                outcomes[position] = exc
            await self._roll_back([items[p] for p in this_round.values() if p not in conflicted])
            return {}

    async def _flip_bulk(
        self, operations: list[Operation], flipping: list[tuple[int, SourceState | None]], outcomes: list[Any]
    ) -> list[BulkItem]:
        if not operations:
            return []
        try:
            return await self._bulk_in_parts(operations, "publishing documents")
        except CarragError as exc:
            # The flips may or may not have happened; an unflipped version is swept later, a flipped
            # one is live. Report the failure either way (the client retries; a retry is idempotent).
            for position, _ in flipping:
                outcomes[position] = exc
            return [BulkItem("index", "", FLIP_UNKNOWN, "no answer") for _ in operations]

    async def _roll_back(self, items: list[PendingWrite]) -> None:
        """Delete what was written of versions that will never be published (best effort: `sweep`
        removes whatever this misses)."""
        if self.originals is not None:
            known = {i.document.document_id: part_count(len(i.original.content)) for i in items if i.original}
            if not await self.originals.delete_known(known):
                items = [i for i in items if i.original is None]  # keep their version records for the sweep
        ids = [i for item in items for i in version_ids(item.document.document_id, len(item.chunks))]
        await self._delete_ids(ids, "rolling back a failed write")

    async def _remove_replaced(self, superseded: list[tuple[str, int, set[str]]]) -> None:
        """Step 3: the replaced versions' originals, then their chunks and version records."""
        # a version re-published under its own id (reindex's catch-up) keeps its original
        retired = [document_id for document_id, _, reused in superseded if version_record_id(document_id) not in reused]
        kept_records = set() if await self._delete_originals(retired) else set(map(version_record_id, retired))
        ids = [
            i
            for document_id, count, reused in superseded
            for i in version_ids(document_id, count)
            if i not in reused and i not in kept_records
        ]
        await self._delete_ids(ids, "removing replaced versions")

    async def _delete_originals(self, document_ids: list[str]) -> bool:
        """Remove these versions' originals; False if that failed (the caller then keeps their version
        records, so the sweep finds the versions and tries again)."""
        return self.originals is None or await self.originals.delete(document_ids)

    async def _delete_ids(self, ids: list[str], action: str, refresh: str | bool = False) -> None:
        """Delete by id; what fails is logged and left to the sweep."""
        if not ids:
            return
        try:
            results = await self._bulk_in_parts([({"delete": {"_id": i}}, None) for i in ids], action, refresh)
        except CarragError as exc:
            logger.warning(
                "deletes left to the sweep", extra={"action": action, "ids": len(ids), "reason": exc.message}
            )
            return
        failed = [r for r in results if not r.ok and r.status != 404]
        if failed:
            logger.warning("deletes left to the sweep", extra={"action": action, "failed": len(failed)})

    # --- deleting ------------------------------------------------------------------------------------
    async def delete(self, document_id: str) -> bool:
        """Unpublish ``document_id`` if it is live, then remove its chunks. False if it was not live."""
        version = await self.version(document_id)
        key = record_key(version) if version else None
        if key is None:
            return False
        for _ in range(FLIP_ATTEMPTS):
            state = await self.source_state(key)
            if state is None or state.document.document_id != document_id:
                return False
            deleted = await self.connection.conditionally(
                "deleting a document",
                self.alias,
                self.connection.writer.delete(
                    index=self.alias,
                    id=source_record_id(key),
                    if_seq_no=state.seq_no,
                    if_primary_term=state.primary_term,
                    refresh=self.refresh,
                ),
            )
            if deleted is None:
                continue  # changed meanwhile: look again
            ids = version_ids(document_id, state.document.chunk_count)
            if not await self._delete_originals([document_id]):
                ids.remove(version_record_id(document_id))  # left for the sweep, which removes the original
            await self._delete_ids(ids, "deleting a document", refresh=self.refresh)
            return True
        raise DependencyUnavailable("store", "the document kept changing while it was being deleted; retry")

    # --- reading the live state (real time: a get or a multi-get, no refresh needed) ---------------
    async def source_state(self, key: str) -> SourceState | None:
        """The record of the source ``key`` (`source_key`), with its concurrency token."""
        with self.connection.errors("looking up a document", self.alias):
            try:
                response = await self.connection.client.get(index=self.alias, id=source_record_id(key))
            except NotFoundError as exc:
                if "index_not_found" in str(exc.body):
                    raise
                return None
        return SourceState(to_document(response["_source"]), response["_seq_no"], response["_primary_term"])

    async def source_states(self, source_ids: Sequence[str]) -> dict[str, SourceState]:
        unique = list(dict.fromkeys(source_ids))
        if not unique:
            return {}
        with self.connection.errors("looking up documents", self.alias):
            response = await self.connection.client.mget(
                index=self.alias, ids=[source_record_id(source) for source in unique], realtime=True
            )
        states = {}
        for doc in response["docs"]:
            if doc.get("found"):
                record = to_document(doc["_source"])
                states[document_key(record)] = SourceState(record, doc["_seq_no"], doc["_primary_term"])
        return states

    async def live_versions(self, source_ids: Sequence[str]) -> dict[str, str]:
        """``source key → document_id`` of the live version of each of these sources that has one."""
        unique = list(dict.fromkeys(source_ids))
        if not unique:
            return {}
        fields = ["source_id", "document_id", "collection_id"]
        with self.connection.errors("checking which versions are live", self.alias):
            response = await self.connection.client.mget(
                index=self.alias,
                docs=[{"_id": source_record_id(key), "_source": {"includes": fields}} for key in unique],
                realtime=True,
            )
        return {
            record_key(doc["_source"]): doc["_source"]["document_id"] for doc in response["docs"] if doc.get("found")
        }

    async def version(self, document_id: str) -> dict[str, Any] | None:
        """The version record of ``document_id``, live or not."""
        with self.connection.errors("looking up a document", self.alias):
            try:
                response = await self.connection.client.get(index=self.alias, id=version_record_id(document_id))
            except NotFoundError as exc:
                if "index_not_found" in str(exc.body):
                    raise
                return None
        return response["_source"]

    async def live_document(self, document_id: str) -> DocumentRecord | None:
        version = await self.version(document_id)
        if version is None:
            return None
        state = await self.source_state(record_key(version))
        return state.document if state is not None and state.document.document_id == document_id else None

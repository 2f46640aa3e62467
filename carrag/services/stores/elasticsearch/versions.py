"""The visibility protocol, writer's side (the reader's is `reads.live_hits`). A write creates a new
*version* (its ``document_id``): its chunks and a version record, indexed with ``refresh=wait_for``
(step 1). It becomes live when its source's record is flipped to it by a conditional write (step 2; on a
conflict the record is read again and the flip retried: the last flip wins). Then the replaced version
is deleted (step 3). Kept originals are written before the flip and removed before the version record,
so `sweep.py` finds what a failed removal leaves. A writer gives up a flip after half of
``abandoned_after``, so the sweep never removes a version that could still become live."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.ids import chunk_id
from carrag.services.models import (
    Chunk,
    DocumentRecord,
    EmbeddingIdentity,
    MetadataValue,
    OriginalFile,
    chunk_heading,
    metadata_pairs,
)
from carrag.services.stores.elasticsearch.connection import (
    BulkItem,
    Connection,
    Operation,
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
from carrag.services.stores.elasticsearch.originals import OriginalsIndex

logger = logging.getLogger(__name__)

FLIP_UNKNOWN = 0  # a flip's bulk status when the request failed: it may or may not have been applied
FLIP_ATTEMPTS = 50  # conflicting flips retried (each retry means another process flipped meanwhile)


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
        self.originals = originals  # None: reindex's copy, which leaves originals alone
        self.alias = alias  # or a concrete index, with require_alias=False (reindex)
        self.require_alias = require_alias
        self.refresh = refresh
        self.abandoned_after = abandoned_after

    async def write(self, items: list[PendingWrite]) -> list[str | BaseException | None]:
        """Write and publish every item's version; each item's outcome (replaced id, or the error)."""
        outcomes: list[str | BaseException | None] = [None] * len(items)
        started = time.monotonic()
        written = await self._write_versions(items, outcomes)
        written = await self._write_originals(items, written, outcomes)
        if written:
            await self.remove(await self._flip(items, written, outcomes, started), "removing replaced versions")
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
            results = await self.bulk(operations, action)
        except CarragError as exc:
            outcomes[:] = [exc] * len(items)
            await self._roll_back(items)
            return []
        failures = failures_by_owner(owners, results)
        for position, failed in failures.items():
            item = items[position]
            action = f"indexing {item.document.filename}"
            outcomes[position] = bulk_failure(
                failed, len(item.chunks) + 1, action, "; nothing of the document was stored"
            )
        await self._roll_back([items[p] for p in failures])
        return [position for position in range(len(items)) if position not in failures]

    async def _write_originals(self, items: list[PendingWrite], written: list[int], outcomes: list[Any]) -> list[int]:
        """Step 1b: the written versions' originals; returns the positions still to publish."""
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

    async def bulk(self, operations: list[Operation], action: str) -> list[BulkItem]:
        return await self.connection.bulk_together(
            operations, index=self.alias, action=action, refresh=self.refresh, require_alias=self.require_alias
        )

    async def _flip(
        self, items: list[PendingWrite], positions: list[int], outcomes: list[Any], started: float
    ) -> list[tuple[str, int]]:
        """Step 2; returns the replaced versions (document_id, chunk_count). A version re-published under
        its own id (reindex's catch-up) replaces nothing: ids are random, so it is the same chunks."""
        replaced: list[tuple[str, int]] = []
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
            for position in todo:
                this_round.setdefault(document_key(items[position].document), position)
            deferred = [position for position in todo if this_round[document_key(items[position].document)] != position]
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
                    if state is not None and state.document.document_id != item.document.document_id:
                        outcomes[position] = state.document.document_id
                        replaced.append((state.document.document_id, state.document.chunk_count))
                elif result.status == 409:
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
        return replaced

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
            return await self.bulk(operations, "publishing documents")
        except CarragError as exc:
            # The flips may or may not have happened; an unflipped version is swept later, a flipped
            # one is live. Report the failure either way (the client retries; a retry is idempotent).
            for position, _ in flipping:
                outcomes[position] = exc
            return [BulkItem("index", "", FLIP_UNKNOWN, "no answer") for _ in operations]

    async def _roll_back(self, items: list[PendingWrite]) -> None:
        """Delete what was written of versions never to be published (`sweep` removes what this misses)."""
        if items:
            await self.remove([(i.document.document_id, len(i.chunks)) for i in items], "rolling back a failed write")

    async def remove(self, versions: Sequence[tuple[str, int]], action: str, refresh: str | bool = False) -> bool:
        """Remove versions ``(document_id, chunk_count)``: their originals, then their chunks and version
        records. False when the originals could not be removed: the version records then stay, so the
        sweep finds the versions and tries again."""
        removed = self.originals is None or await self.originals.delete([document_id for document_id, _ in versions])
        kept = set() if removed else {version_record_id(document_id) for document_id, _ in versions}
        ids = [i for document_id, count in versions for i in version_ids(document_id, count) if i not in kept]
        await self._delete_ids(ids, action, refresh)
        return removed

    async def _delete_ids(self, ids: list[str], action: str, refresh: str | bool) -> None:
        """What fails is logged and left to the sweep."""
        await self.connection.delete_ids(
            ids, index=self.alias, action=action, refresh=refresh, require_alias=self.require_alias
        )

    async def delete(self, document_id: str) -> bool:
        """Unpublish ``document_id`` if it is live, then remove its chunks. False if it was not live."""
        version = await self.version(document_id)
        if version is None:
            return False
        state = await self.change_record(record_key(version), document_id, "deleting a document", None)
        if state is None:
            return False
        await self.remove([(document_id, state.document.chunk_count)], "deleting a document", self.refresh)
        return True

    async def change_record(
        self, key: str, document_id: str, action: str, change: Callable[[DocumentRecord], DocumentRecord] | None
    ) -> SourceState | None:
        """Rewrite the record of the source ``key`` as ``change`` makes its document (None: delete it) while it
        names ``document_id``, conditionally, reading it again after a conflict; the state it applied to, None
        if not live."""
        for _ in range(FLIP_ATTEMPTS):
            state = await self.source_state(key)
            if state is None or state.document.document_id != document_id:
                return None
            target: dict[str, Any] = {"index": self.alias, "id": source_record_id(key), "refresh": self.refresh}
            target |= {"if_seq_no": state.seq_no, "if_primary_term": state.primary_term}
            if change is None:
                write = self.connection.writer.delete(**target)
            else:
                record = source_record(change(state.document), state.document.chunk_count)
                write = self.connection.writer.index(**target, document=record, require_alias=self.require_alias)
            if await self.connection.conditionally(action, self.alias, write) is not None:
                return state
        raise DependencyUnavailable("store", f"the document kept changing while {action}; retry")

    async def update_metadata(
        self,
        document_id: str,
        *,
        tags: list[str] | None,
        title: str | None,
        user_metadata: dict[str, MetadataValue] | None = None,
    ) -> DocumentRecord | None:
        """Set the live ``document_id``'s tags, title and/or user metadata (None leaves a field as it is)
        in place: partial updates of its chunks, then its record rewritten; None if it is not live. A new
        title changes each ``heading``, so the sections are read first (no scripts: they need the painless
        module, which a node may lack)."""
        current = await self.live_document(document_id)
        if current is None:
            return None
        changes: dict[str, Any] = {}
        if tags is not None:
            changes["tags"] = list(tags)
        if title is not None:
            changes["title"] = title
        if user_metadata is not None:
            changes["metadata_pairs"] = metadata_pairs(user_metadata)
        ids = [chunk_id(document_id, index) for index in range(current.chunk_count)] if changes else []
        sections: dict[str, str | None] = {}
        if title is not None:
            found = await self.connection.found(
                "reading a document's chunks", self.alias, ids=ids, source_includes=["section"]
            )
            sections = {doc["_id"]: doc["_source"].get("section") for doc in found}
        operations: list[Operation] = []
        for doc_id in ids:
            fields = dict(changes)
            if title is not None:
                fields["heading"] = chunk_heading(title, sections.get(doc_id))
            operations.append(({"update": {"_id": doc_id}}, {"doc": fields}))
        failed = [result for result in await self.bulk(operations, f"updating {current.filename}") if not result.ok]
        if failed:
            raise bulk_failure(failed, len(ids), f"updating {current.filename}", "; retry the update")

        def updated(document: DocumentRecord) -> DocumentRecord:
            return dataclasses.replace(
                document,
                tags=list(tags) if tags is not None else document.tags,
                title=title if title is not None else document.title,
                user_metadata=dict(user_metadata) if user_metadata is not None else document.user_metadata,
            )

        state = await self.change_record(document_key(current), document_id, "updating a document", updated)
        return updated(state.document) if state is not None else None

    # --- reading the live state (real time: a get or a multi-get, no refresh needed) ---------------
    async def source_state(self, key: str) -> SourceState | None:
        """The record of the source ``key`` (`source_key`), with its concurrency token."""
        response = await self.connection.get("looking up a document", self.alias, source_record_id(key))
        if response is None:
            return None
        return SourceState(to_document(response["_source"]), response["_seq_no"], response["_primary_term"])

    async def source_states(self, source_ids: Sequence[str]) -> dict[str, SourceState]:
        unique = list(dict.fromkeys(source_ids))
        if not unique:
            return {}
        ids = [source_record_id(source) for source in unique]
        found = await self.connection.found("looking up documents", self.alias, ids=ids)
        records = [(to_document(doc["_source"]), doc) for doc in found]
        return {
            document_key(record): SourceState(record, doc["_seq_no"], doc["_primary_term"]) for record, doc in records
        }

    async def live_versions(self, source_ids: Sequence[str]) -> dict[str, str]:
        """``source key → document_id`` of the live version of each of these sources that has one."""
        unique = list(dict.fromkeys(source_ids))
        if not unique:
            return {}
        fields = ["source_id", "document_id", "collection_id"]
        docs = [{"_id": source_record_id(key), "_source": {"includes": fields}} for key in unique]
        found = await self.connection.found("checking which versions are live", self.alias, docs=docs)
        return {record_key(doc["_source"]): doc["_source"]["document_id"] for doc in found}

    async def version(self, document_id: str) -> dict[str, Any] | None:
        """The version record of ``document_id``, live or not."""
        response = await self.connection.get("looking up a document", self.alias, version_record_id(document_id))
        return response["_source"] if response is not None else None

    async def live_document(self, document_id: str) -> DocumentRecord | None:
        version = await self.version(document_id)
        if version is None:
            return None
        state = await self.source_state(record_key(version))
        return state.document if state is not None and state.document.document_id == document_id else None

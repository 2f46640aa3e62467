"""The live state as the visibility protocol reads it (`versions.py`): the source records (which version
of each source is live) and the version records, always in real time (a get or a multi-get: no
refresh needed), with the concurrency token a conditional flip or delete is made against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import NotFoundError

from carrag.services.models import DocumentRecord
from carrag.services.stores.elasticsearch.connection import Connection
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    EPOCH_ID,
    document_key,
    record_key,
    source_record_id,
    to_document,
    version_record_id,
)


@dataclass(slots=True, frozen=True)
class SourceState:
    """A source's record as read: the live version and the record's concurrency token."""

    document: DocumentRecord
    seq_no: int
    primary_term: int


@dataclass(slots=True, frozen=True)
class LiveToken:
    """A source record's live version and the record's concurrency token (which changes with each flip)."""

    document_id: str
    seq_no: int
    primary_term: int


# what a search's check reads (`LiveState.live_check_read`): the epoch, source key → token, chunk id → _source
CheckRead = tuple[str | None, dict[str, LiveToken], dict[str, dict[str, Any]]]


class LiveState:
    """Base of `Versions` (which sets these up): ``alias`` may be a concrete index (reindex's copy)."""

    connection: Connection
    alias: str

    async def source_state(self, key: str) -> SourceState | None:
        """The record of the source ``key`` (`source_key`) in real time (it need not be refreshed)."""
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

    async def read_epoch(self) -> tuple[str | None, str | None]:
        """The epoch now (real time; None when there is none yet) and the concrete index it is in."""
        try:
            response = await self.connection.client.get(
                index=self.alias, id=EPOCH_ID, source_includes=["content_hash"], realtime=True
            )
        except NotFoundError as exc:
            if "index_not_found" in str(exc.body):
                raise
            return None, None
        return response["_source"].get("content_hash"), response["_index"]

    async def live_tokens(self, source_ids: Sequence[str]) -> dict[str, LiveToken]:
        """``source key → (document_id, seq_no, primary_term)`` of each source's record (real time)."""
        if not source_ids:
            return {}
        _, tokens, _ = await self._live_read(source_ids, (), with_epoch=False)
        return tokens

    async def live_check_read(self, source_ids: Sequence[str], chunk_ids: Sequence[str]) -> CheckRead:
        """A search's check in one real-time multi-get: the epoch (None when there is none yet), the
        records of ``source_ids`` as `live_tokens`, and the chunks ``chunk_ids`` (``_id → _source``
        without the vector; ids not found are left out). A chunk read here is the chunk as it was at
        that moment: its version's content, or nothing if that version's chunks were deleted."""
        return await self._live_read(source_ids, chunk_ids, with_epoch=True)

    async def _live_read(self, source_ids: Sequence[str], chunk_ids: Sequence[str], *, with_epoch: bool) -> CheckRead:
        unique = list(dict.fromkeys(source_ids))
        chunks = list(dict.fromkeys(chunk_ids))
        docs: list[dict[str, Any]] = (
            [{"_id": EPOCH_ID, "_source": {"includes": ["content_hash"]}}] if with_epoch else []
        )
        docs.extend(
            {"_id": source_record_id(source), "_source": {"includes": ["source_id", "document_id", "collection_id"]}}
            for source in unique
        )
        docs.extend({"_id": chunk, "_source": {"excludes": CHUNK_SOURCE_EXCLUDES}} for chunk in chunks)
        with self.connection.errors("checking which versions are live", self.alias):
            response = await self.connection.client.mget(index=self.alias, docs=docs, realtime=True)
        found = response["docs"]
        epoch = None
        if with_epoch:
            epoch_doc, found = found[0], found[1:]
            epoch = epoch_doc["_source"].get("content_hash") if epoch_doc.get("found") else None
        tokens = {
            record_key(doc["_source"]): LiveToken(doc["_source"]["document_id"], doc["_seq_no"], doc["_primary_term"])
            for doc in found[: len(unique)]
            if doc.get("found")
        }
        return epoch, tokens, {doc["_id"]: doc["_source"] for doc in found[len(unique) :] if doc.get("found")}

    async def live_versions(self, source_ids: Sequence[str]) -> dict[str, str]:
        """``source key → document_id`` of the live version, for the given sources (real time)."""
        return {source: token.document_id for source, token in (await self.live_tokens(source_ids)).items()}

    async def version(self, document_id: str) -> dict[str, Any] | None:
        """The version record of ``document_id`` (real time), live or not."""
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

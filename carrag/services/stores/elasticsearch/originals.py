"""Kept originals on Elasticsearch (issue 14, item 4): the uploaded bytes of each version, in an
index of their own beside the alias, ``<alias>-originals``.

A version's original is a *header* (id ``<document_id>``: file name, media type, size, number of
parts) and its bytes cut into *parts* of ``PART_BYTES`` (id ``<document_id>:<n>``, a ``binary`` field:
stored, not indexed), so no request or document grows with the file and a download reads one part at
a time. Every read is a real-time get by id; nothing here is ever searched, so no refresh is needed.

The originals follow the visibility protocol (`versions.py`), keyed by the version's ``document_id``:
written after the version's chunks and before its flip (an original whose version is never published
is removed with it by the rollback or the sweep); removed *before* the version record of a replaced,
deleted or abandoned version, so a failed removal leaves a version record for `sweep` to find again.
They live outside the alias's generations, so `carrag reindex` (which keeps document ids) does not copy
them, and `wipe` recreates this index too.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

from elasticsearch import ApiError, NotFoundError

from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.models import Original, OriginalFile
from carrag.services.stores.elasticsearch.connection import (
    BulkItem,
    Connection,
    api_reason,
    bulk_failure,
    every_bucket,
    every_hit,
    failures_by_owner,
)

logger = logging.getLogger(__name__)

PART_BYTES = 1024 * 1024  # bytes per part (base64 makes it ~1.4 MB of JSON)
PARTS_PER_REQUEST = 8  # parts per bulk request, so one request stays ~11 MB whatever the file size

_STORED_ONLY = {"type": "keyword", "index": False, "doc_values": False}
ORIGINALS_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "kind": {"type": "keyword"},  # "header" or "part"
        "document_id": {"type": "keyword"},
        "part": {"type": "integer"},
        "parts": {"type": "integer"},
        "data": {"type": "binary"},  # stored only: binary fields are neither indexed nor searchable
        "filename": _STORED_ONLY,
        "content_type": _STORED_ONLY,
        "size": {"type": "long"},
        "written_at": {"type": "date"},
    },
}

Operation = tuple[dict[str, Any], dict[str, Any] | None]


def part_id(document_id: str, part: int) -> str:
    return f"{document_id}:{part}"


def part_count(size: int) -> int:
    return max((size + PART_BYTES - 1) // PART_BYTES, 1)


def original_ids(document_id: str, parts: int) -> list[str]:
    """Every id an original occupies: its header, then its parts."""
    return [document_id] + [part_id(document_id, n) for n in range(parts)]


def original_operations(document_id: str, original: OriginalFile, written_at: str) -> list[Operation]:
    content = original.content
    parts = part_count(len(content))
    operations: list[Operation] = [
        (
            {"index": {"_id": document_id}},
            {
                "kind": "header",
                "document_id": document_id,
                "filename": original.filename,
                "content_type": original.content_type,
                "size": len(content),
                "parts": parts,
                "written_at": written_at,
            },
        )
    ]
    for n in range(parts):
        data = content[n * PART_BYTES : (n + 1) * PART_BYTES]
        operations.append(
            (
                {"index": {"_id": part_id(document_id, n)}},
                {"kind": "part", "document_id": document_id, "part": n, "data": base64.b64encode(data).decode("ascii")},
            )
        )
    return operations


def originals_index_name(alias: str) -> str:
    return f"{alias}-originals"


class OriginalsIndex:
    def __init__(self, connection: Connection, alias: str, *, shards: int = 1, replicas: int = 0) -> None:
        self.connection = connection
        self.name = originals_index_name(alias)
        self.shards = shards
        self.replicas = replicas
        self.ready = False

    # --- setting up --------------------------------------------------------------------------------
    async def ensure(self) -> None:
        if self.ready:
            return
        client = self.connection.client
        with self.connection.errors(f"setting up the index {self.name}", self.name):
            if not await client.indices.exists(index=self.name):
                try:
                    await client.indices.create(
                        index=self.name,
                        settings={"number_of_shards": self.shards, "number_of_replicas": self.replicas},
                        mappings=ORIGINALS_MAPPINGS,
                    )
                except ApiError as exc:
                    if "resource_already_exists" not in api_reason(exc):
                        raise  # another process creating it first is fine
        self.ready = True

    async def recreate(self) -> None:
        """Delete every original (``wipe``) and start an empty index."""
        with self.connection.errors(f"deleting the index {self.name}", self.name):
            await self.connection.client.indices.delete(index=self.name, ignore_unavailable=True)
        self.ready = False
        await self.ensure()

    # --- writing -----------------------------------------------------------------------------------
    async def write(self, originals: Sequence[tuple[str, OriginalFile]]) -> dict[str, CarragError]:
        """Index each ``(document_id, original)``; the documents whose original was not stored whole,
        with why (what was written of those is deleted again)."""
        await self.ensure()
        written_at = datetime.now(UTC).isoformat()
        operations: list[Operation] = []
        owners: list[str] = []
        for document_id, original in originals:
            for operation in original_operations(document_id, original, written_at):
                operations.append(operation)
                owners.append(document_id)
        errors: dict[str, CarragError] = {}
        try:
            results = await self._bulk(operations, "storing originals")
        except CarragError as exc:
            errors = {document_id: exc for document_id, _ in originals}
        else:
            for document_id, failed in failures_by_owner(owners, results).items():
                errors[document_id] = bulk_failure(
                    failed, owners.count(document_id), "storing the original", "; nothing of the document was stored"
                )
        if errors:
            sizes = {document_id: len(original.content) for document_id, original in originals}
            await self.delete_known({document_id: part_count(sizes[document_id]) for document_id in errors})
        return errors

    async def _bulk(self, operations: list[Operation], action: str) -> list[BulkItem]:
        results: list[BulkItem] = []
        for low in range(0, len(operations), PARTS_PER_REQUEST):
            results += await self.connection.bulk(
                operations[low : low + PARTS_PER_REQUEST], index=self.name, action=action, require_alias=False
            )
        return results

    # --- removing ----------------------------------------------------------------------------------
    async def delete(self, document_ids: Sequence[str]) -> bool:
        """Remove the originals of these versions (those that have one). True when nothing of them is
        left; False when a removal failed (logged; the caller keeps what lets `sweep` try again)."""
        if not document_ids:
            return True
        try:
            await self.ensure()
            with self.connection.errors("looking up originals", self.name):
                response = await self.connection.client.mget(
                    index=self.name, ids=list(dict.fromkeys(document_ids)), realtime=True, source_includes=["parts"]
                )
        except CarragError as exc:
            logger.warning("removing originals failed", extra={"reason": exc.message, "originals": len(document_ids)})
            return False
        parts = {doc["_id"]: int(doc["_source"]["parts"]) for doc in response["docs"] if doc.get("found")}
        return await self.delete_known(parts)

    async def delete_known(self, parts: dict[str, int]) -> bool:
        """Remove originals whose number of parts is known (``document_id → parts``)."""
        ids = [i for document_id, count in parts.items() for i in original_ids(document_id, count)]
        if not ids:
            return True
        try:
            results = await self._bulk([({"delete": {"_id": i}}, None) for i in ids], "removing originals")
        except CarragError as exc:
            logger.warning("removing originals failed", extra={"reason": exc.message, "originals": len(parts)})
            return False
        failed = [r for r in results if not r.ok and r.status != 404]
        if failed:
            logger.warning("removing originals failed", extra={"failed": len(failed), "originals": len(parts)})
        return not failed

    # --- reading -----------------------------------------------------------------------------------
    async def get(self, document_id: str) -> Original | None:
        """The original of version ``document_id`` (real time), its parts read as they are consumed."""
        await self.ensure()
        header = await self._get(document_id, "reading an original", ["filename", "content_type", "size", "parts"])
        if header is None:
            return None
        return Original(
            document_id,
            header["filename"],
            header["content_type"],
            int(header["size"]),
            self._pieces(document_id, int(header["parts"])),
        )

    async def _pieces(self, document_id: str, parts: int) -> AsyncIterator[bytes]:
        for n in range(parts):
            source = await self._get(part_id(document_id, n), "reading an original", ["data"])
            if source is None:  # deleted (document deleted or replaced) while it was being read
                raise DependencyUnavailable("store", f"the original of {document_id} was deleted while being read")
            yield base64.b64decode(source["data"])

    async def _get(self, doc_id: str, action: str, fields: list[str]) -> dict[str, Any] | None:
        with self.connection.errors(action, self.name):
            try:
                response = await self.connection.client.get(
                    index=self.name, id=doc_id, realtime=True, source_includes=fields
                )
            except NotFoundError as exc:
                if "index_not_found" in str(exc.body):
                    self.ready = False
                return None
        return response["_source"]

    # --- checking ----------------------------------------------------------------------------------
    async def problems(self, live_document_ids: set[str]) -> list[str]:
        """Originals of no live version, and originals missing parts (readable lines)."""
        client = self.connection.client
        if not await client.indices.exists(index=self.name):
            return []
        await client.indices.refresh(index=self.name)
        headers = {
            hit["_source"]["document_id"]: int(hit["_source"]["parts"])
            async for hit in every_hit(
                client,
                self.name,
                query={"term": {"kind": "header"}},
                sort=[{"document_id": "asc"}],
                source_includes=["document_id", "parts"],
            )
        }
        stored = {
            bucket["key"]["key"]: bucket["doc_count"]
            async for bucket in every_bucket(client, self.name, {"term": {"kind": "part"}}, "document_id")
        }
        problems = []
        orphans = [document_id for document_id in headers if document_id not in live_document_ids]
        if orphans:
            problems.append(f"{len(orphans)} kept originals belong to no document")
        incomplete = [document_id for document_id, parts in headers.items() if stored.get(document_id, 0) != parts]
        if incomplete:
            problems.append(f"{len(incomplete)} kept originals do not have all their parts")
        headless = sum(count for document_id, count in stored.items() if document_id not in headers)
        if headless:
            problems.append(f"{headless} parts of originals belong to no original")
        return problems

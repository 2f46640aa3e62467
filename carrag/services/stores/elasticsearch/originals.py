"""Kept originals: the uploaded bytes of each version in the index ``<alias>-originals``, a header (id
``<document_id>``) and parts of ``PART_BYTES`` (id ``<document_id>:<n>``, stored, not indexed), so no
request grows with the file; read by real-time gets. Keyed by version, outside the alias's generations
(`carrag reindex` keeps document ids, so it does not copy them)."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.models import Original, OriginalFile
from carrag.services.stores.elasticsearch.connection import (
    BulkItem,
    Connection,
    IndexMissing,
    Operation,
    bulk_failure,
    every_bucket,
    every_hit,
    failures_by_owner,
)
from carrag.services.stores.elasticsearch.mapping import MAPPINGS

logger = logging.getLogger(__name__)

PART_BYTES = 1024 * 1024  # bytes per part (base64 makes it ~1.4 MB of JSON)
PARTS_PER_REQUEST = 8  # parts per bulk request, so one request stays ~11 MB whatever the file size


def part_id(document_id: str, part: int) -> str:
    return f"{document_id}:{part}"


def part_count(size: int) -> int:
    return max((size + PART_BYTES - 1) // PART_BYTES, 1)


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

    async def ensure(self) -> None:
        if not self.ready:
            await self.connection.create_index(
                f"setting up the index {self.name}",
                self.name,
                settings={"number_of_shards": self.shards, "number_of_replicas": self.replicas},
                mappings=MAPPINGS["originals"],
            )
            self.ready = True

    async def recreate(self) -> None:
        """Delete every original (``wipe``) and start an empty index."""
        with self.connection.errors(f"deleting the index {self.name}", self.name):
            await self.connection.client.indices.delete(index=self.name, ignore_unavailable=True)
        self.ready = False
        await self.ensure()

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
        try:
            results: list[BulkItem] = []
            for low in range(0, len(operations), PARTS_PER_REQUEST):
                part = operations[low : low + PARTS_PER_REQUEST]
                results += await self.connection.bulk(
                    part, index=self.name, action="storing originals", require_alias=False
                )
        except CarragError as exc:
            errors = {document_id: exc for document_id, _ in originals}
        else:
            errors = {
                document_id: bulk_failure(
                    failed, owners.count(document_id), "storing the original", "; nothing of the document was stored"
                )
                for document_id, failed in failures_by_owner(owners, results).items()
            }
        if errors:
            sizes = {document_id: len(original.content) for document_id, original in originals}
            await self.delete_known({document_id: part_count(sizes[document_id]) for document_id in errors})
        return errors

    async def delete(self, document_ids: Sequence[str]) -> bool:
        """Remove the originals of these versions (those that have one). True when nothing of them is
        left; False when a removal failed (logged; the caller keeps what lets `sweep` try again)."""
        if not document_ids:
            return True
        try:
            await self.ensure()
            ids = list(dict.fromkeys(document_ids))
            found = await self.connection.found("looking up originals", self.name, ids=ids, source_includes=["parts"])
        except CarragError as exc:
            logger.warning("removing originals failed", extra={"reason": exc.message, "originals": len(document_ids)})
            return False
        parts = {doc["_id"]: int(doc["_source"]["parts"]) for doc in found}
        return await self.delete_known(parts)

    async def delete_known(self, parts: dict[str, int]) -> bool:
        """Remove originals whose number of parts is known (``document_id → parts``): headers, then parts."""
        ids = [*parts, *(part_id(document_id, n) for document_id, count in parts.items() for n in range(count))]
        return await self.connection.delete_ids(ids, index=self.name, action="removing originals", require_alias=False)

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
        try:
            response = await self.connection.get(action, self.name, doc_id, realtime=True, source_includes=fields)
        except IndexMissing:
            self.ready = False
            return None
        return response["_source"] if response is not None else None

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

"""Finding and removing abandoned versions (`Versions.sweep`): version records older than
``abandoned_after`` whose source record names another version (or none) are the remains of a crashed
write or of a replaced version whose deletion failed; their originals go first, then their chunks and
version record (so a failed removal of the originals leaves the record for the next sweep)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from carrag.services.ids import chunk_id
from carrag.services.stores.elasticsearch.mapping import record_key, version_record_id

if TYPE_CHECKING:
    from carrag.services.stores.elasticsearch.versions import Versions

SWEEP_PAGE = 1000


def version_ids(document_id: str, chunk_count: int) -> list[str]:
    """Every id a version occupies: its chunks, then its version record."""
    return [chunk_id(document_id, index) for index in range(chunk_count)] + [version_record_id(document_id)]


async def sweep_abandoned(versions: Versions, older_than: float | None = None) -> int:
    cutoff = datetime.now(UTC) - timedelta(seconds=versions.abandoned_after if older_than is None else older_than)
    removed = 0
    after: list[Any] | None = None
    while True:
        request: dict[str, Any] = {
            "query": {
                "bool": {
                    "filter": [
                        {"term": {"doc_kind": "version"}},
                        {"range": {"written_at": {"lt": cutoff.isoformat()}}},
                    ]
                }
            },
            "sort": [{"document_id": "asc"}],
            "size": SWEEP_PAGE,
            "source_includes": ["document_id", "source_id", "chunk_count", "collection_id"],
        }
        if after is not None:
            request["search_after"] = after
        with versions.connection.errors("finding abandoned versions", versions.alias):
            response = await versions.connection.client.search(index=versions.alias, **request)
        hits = response["hits"]["hits"]
        if not hits:
            break
        found = [hit["_source"] for hit in hits]
        live = await versions.live_versions([record_key(v) for v in found])
        abandoned = [v for v in found if live.get(record_key(v)) != v["document_id"]]
        if not await versions._delete_originals([v["document_id"] for v in abandoned]):
            abandoned = []  # their originals could not be removed: try again at the next sweep
        ids = [i for v in abandoned for i in version_ids(v["document_id"], int(v["chunk_count"]))]
        if await versions._delete_retired(ids, "removing abandoned versions"):  # some may have been live
            removed += len(abandoned)
        if len(hits) < SWEEP_PAGE:
            break
        after = hits[-1]["sort"]
    await versions.retired.flush()  # removed when this returns (after the grace, `retirement.py`)
    return removed

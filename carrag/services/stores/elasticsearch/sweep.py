"""Removing abandoned versions: version records older than ``abandoned_after`` that their source
record does not name (a crashed write, or a replaced version whose deletion failed). Originals go
first, so a failed removal leaves the record for the next sweep. Idempotent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from carrag.services.errors import DependencyUnavailable
from carrag.services.stores.elasticsearch.connection import PAGE, every_hit
from carrag.services.stores.elasticsearch.mapping import record_key
from carrag.services.stores.elasticsearch.versions import Versions

logger = logging.getLogger(__name__)


async def sweep_periodically(versions: Versions, ready: Callable[[], Awaitable[None]]) -> None:
    """Remove abandoned versions now and then (each process does; the work is idempotent)."""
    while True:
        await asyncio.sleep(max(versions.abandoned_after / 2, 1.0))
        try:
            await ready()
            removed = await sweep_abandoned(versions)
            if removed:
                logger.info("removed abandoned versions", extra={"versions": removed, "index": versions.alias})
        except DependencyUnavailable as exc:
            logger.warning("sweep of abandoned versions failed", extra={"reason": exc.message})


async def sweep_abandoned(versions: Versions, older_than: float | None = None) -> int:
    """Remove versions not live and written over ``older_than`` (default ``abandoned_after``) seconds ago;
    how many were removed."""
    cutoff = datetime.now(UTC) - timedelta(seconds=versions.abandoned_after if older_than is None else older_than)
    query = {
        "bool": {"filter": [{"term": {"doc_kind": "version"}}, {"range": {"written_at": {"lt": cutoff.isoformat()}}}]}
    }
    removed, page = 0, []
    with versions.connection.errors("finding abandoned versions", versions.alias):
        async for hit in every_hit(
            versions.connection.client,
            versions.alias,
            query=query,
            sort=[{"document_id": "asc"}],
            source_includes=["document_id", "source_id", "chunk_count", "collection_id"],
        ):
            page.append(hit["_source"])
            if len(page) == PAGE:
                removed, page = removed + await _remove_abandoned(versions, page), []
    return removed + await _remove_abandoned(versions, page)


async def _remove_abandoned(versions: Versions, found: list[dict[str, Any]]) -> int:
    live = await versions.live_versions([record_key(v) for v in found])
    abandoned = [
        (v["document_id"], int(v["chunk_count"])) for v in found if live.get(record_key(v)) != v["document_id"]
    ]
    return len(abandoned) if await versions.remove(abandoned, "removing abandoned versions") else 0

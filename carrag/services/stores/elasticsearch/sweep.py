"""Upkeep of the versions: the sweep removes abandoned versions, version records older than
``abandoned_after`` that their source record does not name (a crashed write, or a replaced version
whose deletion failed; originals go first, so a failed removal leaves the record for the next sweep;
idempotent); the integrity check compares live versions with their chunks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from elasticsearch import AsyncElasticsearch

from carrag.services.errors import DependencyUnavailable
from carrag.services.stores.elasticsearch.connection import PAGE, every_bucket, every_hit
from carrag.services.stores.elasticsearch.mapping import record_key
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
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


async def integrity_problems(client: AsyncElasticsearch, index: str, originals: OriginalsIndex) -> list[str]:
    """Readable lines (empty: consistent): each source record's ``chunk_count`` against its version's
    chunks (indexes 0..n-1), chunks of no live version (a write in progress, a replaced version being
    deleted, a crash's remains not swept yet), chunks without a vector, and the originals' problems."""
    await client.indices.refresh(index=index)
    declared = {
        hit["_source"]["document_id"]: hit["_source"]["chunk_count"]
        async for hit in every_hit(
            client,
            index,
            query={"term": {"doc_kind": "document"}},
            sort=[{"source_id": "asc"}],
            source_includes=["document_id", "chunk_count"],
        )
    }
    low, high = {"min": {"field": "chunk_index"}}, {"max": {"field": "chunk_index"}}
    actual = {
        bucket["key"]["key"]: (bucket["doc_count"], int(bucket["low"]["value"]), int(bucket["high"]["value"]))
        async for bucket in every_bucket(
            client, index, {"term": {"doc_kind": "chunk"}}, "document_id", low=low, high=high
        )
    }
    problems = []
    for document_id, count in declared.items():
        chunks, first, last = actual.get(document_id, (0, 0, -1))
        if chunks != count:
            problems.append(f"document {document_id} declares {count} chunks but has {chunks}")
        elif chunks and (first, last) != (0, chunks - 1):
            problems.append(f"document {document_id} has chunk indexes {first}..{last} for {chunks} chunks")
    orphans = sum(count for document_id, (count, _, _) in actual.items() if document_id not in declared)
    if orphans:
        problems.append(f"{orphans} chunks belong to no document")
    missing = await client.count(
        index=index,
        query={"bool": {"filter": {"term": {"doc_kind": "chunk"}}, "must_not": {"exists": {"field": "embedding"}}}},
    )
    if missing["count"]:
        problems.append(f"{missing['count']} chunks lack a vector")
    return problems + await originals.problems(set(declared))

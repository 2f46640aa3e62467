"""The integrity check of an Elasticsearch index: live versions against their chunks."""

from __future__ import annotations

from typing import Any

from elasticsearch import AsyncElasticsearch

PAGE = 1000


async def integrity_problems(client: AsyncElasticsearch, index: str) -> list[str]:
    """Readable lines (empty: consistent): each source record's ``chunk_count`` against its version's
    chunks (indexes 0..n-1), chunks of no live version (a write in progress, a replaced version being
    deleted, or the remains of a crash that the sweep has not removed yet), and chunks without a vector."""
    await client.indices.refresh(index=index)
    declared: dict[str, int] = {}
    after: list[Any] | None = None
    while True:
        response = await client.search(
            index=index,
            query={"term": {"doc_kind": "document"}},
            sort=[{"source_id": "asc"}],
            size=PAGE,
            source_includes=["document_id", "chunk_count"],
            search_after=after or None,
        )
        hits = response["hits"]["hits"]
        declared.update({hit["_source"]["document_id"]: hit["_source"]["chunk_count"] for hit in hits})
        if len(hits) < PAGE:
            break
        after = hits[-1]["sort"]
    actual = await _chunks_per_version(client, index)
    problems = []
    for document_id, count in declared.items():
        chunks, low, high = actual.get(document_id, (0, 0, -1))
        if chunks != count:
            problems.append(f"document {document_id} declares {count} chunks but has {chunks}")
        elif chunks and (low, high) != (0, chunks - 1):
            problems.append(f"document {document_id} has chunk indexes {low}..{high} for {chunks} chunks")
    orphans = sum(count for document_id, (count, _, _) in actual.items() if document_id not in declared)
    if orphans:
        problems.append(f"{orphans} chunks belong to no document")
    missing = await client.search(
        index=index,
        size=0,
        track_total_hits=True,
        query={"bool": {"filter": {"term": {"doc_kind": "chunk"}}, "must_not": {"exists": {"field": "embedding"}}}},
    )
    if missing["hits"]["total"]["value"]:
        problems.append(f"{missing['hits']['total']['value']} chunks lack a vector")
    return problems


async def _chunks_per_version(client: AsyncElasticsearch, index: str) -> dict[str, tuple[int, int, int]]:
    """``document_id → (chunks, lowest chunk_index, highest chunk_index)`` over every chunk."""
    actual: dict[str, tuple[int, int, int]] = {}
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {"size": PAGE, "sources": [{"id": {"terms": {"field": "document_id"}}}]}
        if after:
            composite["after"] = after
        response = await client.search(
            index=index,
            query={"term": {"doc_kind": "chunk"}},
            size=0,
            aggregations={
                "documents": {
                    "composite": composite,
                    "aggregations": {
                        "low": {"min": {"field": "chunk_index"}},
                        "high": {"max": {"field": "chunk_index"}},
                    },
                }
            },
        )
        aggregation = response.get("aggregations", {}).get("documents", {})
        for bucket in aggregation.get("buckets", []):
            actual[bucket["key"]["id"]] = (
                bucket["doc_count"],
                int(bucket["low"]["value"]),
                int(bucket["high"]["value"]),
            )
        after = aggregation.get("after_key")
        if not aggregation.get("buckets") or not after:
            return actual

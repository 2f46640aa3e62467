"""The integrity check of an Elasticsearch index: live versions against their chunks."""

from __future__ import annotations

from elasticsearch import AsyncElasticsearch

from carrag.services.stores.elasticsearch.connection import every_bucket, every_hit
from carrag.services.stores.elasticsearch.originals import OriginalsIndex


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

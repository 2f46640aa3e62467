"""One version of a source per result, across the two legs: a source replaced between the legs' checks
can come back old from one leg and new from the other. For such a source the store is asked which
version is live now and only its chunks are kept (none, if it was replaced again meanwhile).
"""

from __future__ import annotations

from carrag.services.models import ScoredChunk
from carrag.services.stores.base import Store


async def one_version_per_source(
    store: Store, lexical: list[ScoredChunk], semantic: list[ScoredChunk]
) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
    mixed = _sources_in_two_versions(lexical, semantic)
    if not mixed:
        return lexical, semantic
    live: dict[tuple[str, str], str | None] = {}
    for collection_id, source_id in mixed:
        record = await store.find_by_source(source_id, collection_id)
        live[(collection_id, source_id)] = record.document_id if record is not None else None

    def kept(hits: list[ScoredChunk]) -> list[ScoredChunk]:
        return [hit for hit in hits if _source(hit) not in live or live[_source(hit)] == hit.chunk.document_id]

    return kept(lexical), kept(semantic)


def _sources_in_two_versions(*legs: list[ScoredChunk]) -> list[tuple[str, str]]:
    """Sources whose hits are of more than one version, in order of their first hit. One pass with the
    first version seen per source: the common answer, none, costs no set per source."""
    first: dict[tuple[str, str], str] = {}
    mixed: set[tuple[str, str]] = set()
    for hits in legs:
        for hit in hits:
            source = _source(hit)
            if first.setdefault(source, hit.chunk.document_id) != hit.chunk.document_id:
                mixed.add(source)
    return [source for source in first if source in mixed] if mixed else []


def _source(hit: ScoredChunk) -> tuple[str, str]:
    return (hit.chunk.collection_id, hit.chunk.source_id)

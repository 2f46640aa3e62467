"""The two search legs, each filtered to live versions (`live_filter.py`), a hit carrying the neighbours
its chunk stores, the kNN leg telling its vectors' model (`served_identity.py`); and windows read by id."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from carrag.services.errors import UpstreamError
from carrag.services.ids import chunk_id
from carrag.services.models import EmbeddingIdentity, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.stores.base import VectorHits
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.live_filter import Hit, Search, live_hits
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    SEARCH_SOURCE_EXCLUDES,
    STORED_NEIGHBOURS,
    stored_neighbours,
    to_chunk,
)
from carrag.services.stores.elasticsearch.reads import IndexReads
from carrag.services.stores.elasticsearch.served_identity import ServedIdentity
from carrag.services.stores.elasticsearch.versions import Versions


class SearchLegs:
    def __init__(
        self,
        reads: IndexReads,
        versions: Versions,
        served: ServedIdentity,
        num_candidates: int,
        embedding_identity: Callable[[], Awaitable[EmbeddingIdentity | None]],
    ) -> None:
        self.reads = reads
        self.versions = versions
        self.served = served
        self.num_candidates = num_candidates
        self.embedding_identity = embedding_identity  # read from Elasticsearch (the store's)

    async def lexical(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0 or queries.lexical_request(query, k, filters) is None:
            return []

        async def search(size: int, exclude: frozenset[str]) -> list[Hit]:
            request = queries.lexical_request(query, size, filters, exclude=exclude)
            return await self._hits("searching (BM25)", request) if request is not None else []

        return [_scored(hit, float(hit["_score"])) for hit in await self._live(search, k)]

    async def vector(self, vector: np.ndarray, k: int, filters: SearchFilters) -> VectorHits:
        if k <= 0:
            return VectorHits()

        async def search(size: int, exclude: frozenset[str]) -> list[Hit]:
            request = queries.knn_request(vector, size, self.num_candidates, filters, exclude=exclude)
            return await self._hits("searching (kNN)", request)

        try:
            found = await self._live(search, min(k, queries.MAX_NUM_CANDIDATES))
        except UpstreamError:
            if await self.embedding_identity() is None:
                return VectorHits()  # nothing was ever embedded: no vector field yet
            raise
        indices = {hit["_index"] for hit in found}
        model = None
        if len(indices) == 1:  # one search reads one index behind the alias
            model = await self.reads.guarded(
                "reading the embedding model", lambda: self.served.of_index(indices.pop()), None
            )
        # Elasticsearch scores cosine as (1 + cos) / 2; report the cosine itself, like SQLite.
        return VectorHits([_scored(hit, 2.0 * float(hit["_score"]) - 1.0) for hit in found], model)

    async def windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        """One real-time multi-get of the neighbours' ids, not checked against the source records: the
        centres come from live hits, a version's chunks never change, and a version replaced since
        gives a shorter passage, as if read a moment later."""
        wanted = sorted(
            {
                (document_id, index)
                for document_id, centre in dict.fromkeys(centres)
                for index in range(max(centre - radius, 0), centre + max(radius, 0) + 1)
            }
        )
        if not wanted:
            return []

        action = "fetching neighbouring chunks"
        ids = [chunk_id(document_id, index) for document_id, index in wanted]
        fetch = lambda: self.reads.connection.found(  # noqa: E731
            action, self.reads.index, ids=ids, source_excludes=CHUNK_SOURCE_EXCLUDES
        )
        return [to_chunk(doc["_source"]) for doc in await self.reads.guarded(action, fetch, [])]

    async def _hits(self, action: str, request: dict[str, Any]) -> list[Hit]:
        response = await self.reads.search(action, **request, source_excludes=SEARCH_SOURCE_EXCLUDES)
        return list(response["hits"]["hits"])

    async def _live(self, search: Search, k: int) -> list[Hit]:
        async def live_versions(keys: Sequence[str]) -> dict[str, str]:
            read = self.versions.live_versions
            return await self.reads.guarded("checking which versions are live", lambda: read(keys), {})

        return await live_hits(search, live_versions, k)


def _scored(hit: Hit, score: float) -> ScoredChunk:
    chunk = to_chunk(hit["_source"])
    neighbours = stored_neighbours(hit["_source"])
    if neighbours is None:  # written before chunks stored them: expanded by `windows`
        return ScoredChunk(chunk, score)
    return ScoredChunk(chunk, score, STORED_NEIGHBOURS, neighbours)

"""Every read of the index goes through `IndexReads`: the index set up on first use, a missing index
(someone is wiping it) read as empty, searches that fail rather than answer without a shard, walks past
the result window; the two search legs, their hits filtered to live versions (`live_hits`), each
carrying the neighbours its chunk stores; windows read by id."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from carrag.services.errors import UpstreamError
from carrag.services.ids import chunk_id
from carrag.services.models import EmbeddingIdentity, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.stores.base import VectorHits
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.layout import IndexLayout, ServedIdentity
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    SEARCH_SOURCE_EXCLUDES,
    STORED_NEIGHBOURS,
    record_key,
    stored_neighbours,
    to_chunk,
)
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
from carrag.services.stores.elasticsearch.versions import Versions

logger = logging.getLogger(__name__)

ATTEMPTS = 4  # searches run again when their hits' versions changed meanwhile

Hit = dict[str, Any]
Search = Callable[[int, frozenset[str]], Awaitable[list[Hit]]]  # (size, versions to leave out) → hits
LiveVersions = Callable[[Sequence[str]], Awaitable[dict[str, str]]]  # source keys → live document_id

EMPTY_RESPONSE: dict[str, Any] = {"hits": {"hits": [], "total": {"value": 0}}}


class IndexReads:
    def __init__(
        self,
        connection: Connection,
        layout: IndexLayout,
        originals: OriginalsIndex,
        versions: Versions,
        served: ServedIdentity,
        num_candidates: int,
    ) -> None:
        self.connection = connection
        self.layout = layout
        self.originals = originals
        self.versions = versions
        self.served = served
        self.num_candidates = num_candidates
        self.index = layout.alias

    async def ready(self) -> None:
        await self.layout.ensure()
        await self.originals.ensure()

    async def guarded(self, action: str, call: Callable[[], Awaitable[Any]], empty: Any) -> Any:
        """Run a read; a missing index (someone is wiping it) reads as empty and is set up next time."""
        await self.ready()
        try:
            with self.connection.errors(action, self.index):
                return await call()
        except IndexMissing:
            self.layout.ready = False
            return empty

    async def embedding_identity(self) -> EmbeddingIdentity | None:
        """A mapping request; `ServedIdentity.current` is the searches' cheap one."""

        async def read() -> EmbeddingIdentity | None:
            index, identity = await self.layout.identity_with_index(self.index)
            self.served.learn(index, identity)
            return identity

        return await self.guarded("reading the embedding model", read, None)

    async def search(self, action: str, **request: Any) -> dict[str, Any]:
        return await self.guarded(
            action,
            # a shard without any copy fails the search (503) instead of answering without its chunks
            lambda: self.connection.client.search(index=self.index, allow_partial_search_results=False, **request),
            EMPTY_RESPONSE,
        )

    async def walk(
        self,
        action: str,
        query: dict[str, Any],
        sort: list[Any],
        *,
        offset: int = 0,
        limit: int | None = None,
        **request: Any,
    ) -> tuple[list[Hit], int]:
        """Hits ``offset .. offset+limit`` (all when ``limit`` is None) in ``sort`` order, and the total:
        one search within the result window, pages of ``search_after`` beyond (``sort`` ends unique)."""
        window = queries.MAX_RESULT_WINDOW
        if limit is not None and offset + limit <= window:
            response = await self.search(
                action, query=query, sort=sort, from_=offset, size=limit, track_total_hits=True, **request
            )
            return response["hits"]["hits"], int(response["hits"]["total"]["value"])
        end = None if limit is None else offset + limit
        hits: list[Hit] = []
        seen, total, after = 0, 0, None
        while end is None or seen < end:
            page = await self.search(
                action,
                query=query,
                sort=sort,
                size=window,
                track_total_hits=after is None,
                search_after=after,  # None is not sent
                **request,
            )
            if after is None:
                total = int(page["hits"]["total"]["value"])
            batch = page["hits"]["hits"]
            hits.extend(batch[max(offset - seen, 0) : None if end is None else end - seen])
            seen += len(batch)
            if len(batch) < window:
                break
            after = batch[-1]["sort"]
        return hits, total

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0 or queries.lexical_request(query, k, filters) is None:
            return []

        async def search(size: int, exclude: frozenset[str]) -> list[Hit]:
            request = queries.lexical_request(query, size, filters, exclude=exclude)
            return await self._hits("searching (BM25)", request) if request is not None else []

        return [_scored(hit, float(hit["_score"])) for hit in await self._live(search, k)]

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> VectorHits:
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
            model = await self.guarded("reading the embedding model", lambda: self.served.of_index(indices.pop()), None)
        # Elasticsearch scores cosine as (1 + cos) / 2; report the cosine itself, like SQLite.
        return VectorHits([_scored(hit, 2.0 * float(hit["_score"]) - 1.0) for hit in found], model)

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
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
        fetch = lambda: self.connection.found(  # noqa: E731
            action, self.index, ids=ids, source_excludes=CHUNK_SOURCE_EXCLUDES
        )
        return [to_chunk(doc["_source"]) for doc in await self.guarded(action, fetch, [])]

    async def _hits(self, action: str, request: dict[str, Any]) -> list[Hit]:
        response = await self.search(action, **request, source_excludes=SEARCH_SOURCE_EXCLUDES)
        return list(response["hits"]["hits"])

    async def _live(self, search: Search, k: int) -> list[Hit]:
        async def live_versions(keys: Sequence[str]) -> dict[str, str]:
            return await self.guarded("checking which versions are live", lambda: self.versions.live_versions(keys), {})

        return await live_hits(search, live_versions, k)


def _scored(hit: Hit, score: float) -> ScoredChunk:
    chunk = to_chunk(hit["_source"])
    neighbours = stored_neighbours(hit["_source"])
    if neighbours is None:  # written before chunks stored them: expanded by `windows`
        return ScoredChunk(chunk, score)
    return ScoredChunk(chunk, score, STORED_NEIGHBOURS, neighbours)


async def live_hits(search: Search, live_versions: LiveVersions, k: int) -> list[Hit]:
    """The best ``k`` hits of ``search`` that belong to live versions: how a search decides which version of a
    document is live. A version is live exactly while its source's record names it, and a writer flips that
    record only once every chunk of the new version is searchable on every shard copy. After each search one
    real-time multi-get reads the records of the hits' sources, and a hit is kept only if its version is the one
    its record names: never two versions of a source, never a version being written or abandoned (no record
    names it), never one replaced or deleted before the check (the record is flipped before the replace or
    delete is acknowledged). When a dropped hit's source is live under another version, a flip fell within the
    search, which may have seen that version in part; dropped hits may also have crowded out live ones. Either
    way the search runs again without the dropped versions (the new version was flipped before the repeat began,
    so it is searched whole), at most ``ATTEMPTS`` times: a source still changing then is left out. A version
    published during the search whose source had no other version among the hits may come back in part, every
    chunk of it live."""
    stale: frozenset[str] = frozenset()
    for _ in range(ATTEMPTS):
        hits = await search(k, stale)
        keys = [record_key(hit["_source"]) for hit in hits]
        live = await live_versions(keys) if hits else {}
        versions = [hit["_source"]["document_id"] for hit in hits]
        dropped = {version for key, version in zip(keys, versions, strict=True) if live.get(key) != version}
        flipped = {key for key, version in zip(keys, versions, strict=True) if live.get(key, version) != version}
        if not dropped or (not flipped and len(hits) < k):
            return [hit for hit, key, version in zip(hits, keys, versions, strict=True) if live.get(key) == version]
        stale = (stale | dropped) - set(live.values())  # a version pending a moment ago may be live now
    logger.warning("search hits of sources that kept changing were left out", extra={"attempts": ATTEMPTS})
    return [
        hit
        for hit, key, version in zip(hits, keys, versions, strict=True)
        if live.get(key) == version and key not in flipped
    ]

"""The two search legs (BM25 and kNN), each filtered to live versions (`live_filter.py`), with the
neighbours the hits store fetched with them, or those of the best hits read in the same check
(`windows.py`), and the kNN leg reporting which model its hits' vectors are of (`served_identity.py`);
plus `get_windows` for the winners without."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from carrag.services.errors import UpstreamError
from carrag.services.ids import chunk_id
from carrag.services.models import (
    ScoredChunk,
    SearchFilters,
    StoredChunk,
)
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.live_filter import EpochRead, LiveCheck, LiveFilter
from carrag.services.stores.elasticsearch.live_state import CheckRead
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    SEARCH_SOURCE_EXCLUDES,
    record_key,
    to_chunk,
)
from carrag.services.stores.elasticsearch.reads import Hit, IndexReads
from carrag.services.stores.elasticsearch.shared_check import SharedCheck
from carrag.services.stores.elasticsearch.versions import Versions
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows
from carrag.services.stores.searched_model import searched_model


class SearchLegs(IndexReads):
    num_candidates: int
    versions: Versions
    _windows: PrefetchedWindows
    _live_filter: LiveFilter

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0 or queries.lexical_request(query, k, filters) is None:
            return []

        async def run(size: int, stale: set[str]) -> list[Hit]:
            request = queries.lexical_request(
                query, size, queries.excluding(filters, stale), legacy=self.layout.legacy_chunks
            )
            response = await self._search("searching (BM25)", **request, source_excludes=SEARCH_SOURCE_EXCLUDES)  # type: ignore[arg-type]
            return response["hits"]["hits"]

        found = await self._live_filter.hits(run, k)
        return self._windows.scored(found, lambda hit: float(hit["_score"]))

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0:
            return []

        async def run(size: int, stale: set[str]) -> list[Hit]:
            request = queries.knn_request(
                vector, size, self.num_candidates, queries.excluding(filters, stale), legacy=self.layout.legacy_chunks
            )
            response = await self._search("searching (kNN)", **request, source_excludes=SEARCH_SOURCE_EXCLUDES)
            return response["hits"]["hits"]

        try:
            found = await self._live_filter.hits(run, min(k, queries.MAX_NUM_CANDIDATES))
        except UpstreamError:
            if await self.embedding_identity() is None:  # nothing was ever embedded: no vector field yet
                return []
            raise
        indices = {hit["_index"] for hit in found.hits}
        if len(indices) == 1:  # one search reads one index behind the alias
            searched_model.set(
                await self._guarded(
                    "reading the embedding model", lambda: self.served_identity.of_index(indices.pop()), None
                )
            )
        # Elasticsearch scores cosine as (1 + cos) / 2; report the cosine itself, like SQLite.
        return self._windows.scored(found, lambda hit: 2.0 * float(hit["_score"]) - 1.0)

    def _epoch_beside(self) -> EpochRead:
        """The epoch read sent beside a search: the round's, for a leg of a hybrid search."""
        round_ = SharedCheck.current()
        if round_ is not None:
            return round_.epoch_beside(self.versions.read_epoch)
        return EpochRead.start(self.versions.read_epoch)

    def shared_check(self) -> SharedCheck:
        """A round in which the legs of one search share their first live check (`shared_check.py`)."""
        return SharedCheck(self._read_live, self._windows)

    async def _live_check(self, hits: list[Hit], to_read: list[Hit]) -> LiveCheck:
        """The epoch, the records of ``to_read``'s sources and, in the same multi-get, the chunks
        around ``hits`` (`windows.py`); read with the other leg's when this leg runs in a
        `SharedCheck` round."""
        sources = [record_key(hit["_source"]) for hit in to_read]
        member = SharedCheck.joined()
        if member is not None:
            return await SharedCheck.check(member, sources, hits)
        around = self._windows.wanted(hits)
        read_for = frozenset(hit["_id"] for hit in self._windows.covered(hits))
        epoch, tokens, chunks = await self._read_live(sources, around)
        return LiveCheck(tokens, chunks, read_for, epoch)

    async def _read_live(self, sources: Sequence[str], chunk_ids: Sequence[str]) -> CheckRead:
        result: CheckRead = await self._guarded(
            "checking which versions are live",
            lambda: self.versions.live_check_read(sources, chunk_ids),
            (None, {}, {}),
        )
        return result

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        """One real-time multi-get of the neighbours' ids (derived from document id and index).

        Not checked against the source records: the centres come from hits that were live, a
        version's chunks are consistent among themselves, and a real-time get never returns a
        chunk already deleted."""
        wanted = sorted(
            {
                (document_id, index)
                for document_id, centre in dict.fromkeys(centres)
                for index in range(max(centre - radius, 0), centre + max(radius, 0) + 1)
            }
        )
        if not wanted:
            return []

        async def fetch() -> dict[str, Any]:
            response = await self.connection.client.mget(
                index=self.index,
                ids=[chunk_id(document_id, index) for document_id, index in wanted],
                realtime=True,
                source_excludes=CHUNK_SOURCE_EXCLUDES,
            )
            return response.body

        response = await self._guarded("fetching neighbouring chunks", fetch, {"docs": []})
        chunks = [to_chunk(doc["_source"]) for doc in response["docs"] if doc.get("found")]
        requested = set(wanted)
        return [chunk for chunk in chunks if chunk.key in requested]

"""The plumbing every read of `ElasticsearchStore` goes through: setting the index up on first use, a
missing index (someone is wiping it) read as empty, searches that fail rather than answer without a
shard, walks past the result window; and the embedding model the index holds (`served_identity.py`
for the searches' copy of it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from carrag.services.models import (
    EmbeddingIdentity,
)
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.layout import IndexLayout
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
from carrag.services.stores.elasticsearch.served_identity import ServedIdentity

EMPTY_RESPONSE: dict[str, Any] = {"hits": {"hits": [], "total": {"value": 0}}}

Hit = dict[str, Any]


class IndexReads:
    """Base of `ElasticsearchStore` (which sets these attributes up)."""

    index: str  # the alias
    connection: Connection
    layout: IndexLayout
    originals: OriginalsIndex
    served_identity: ServedIdentity

    async def _ready(self) -> None:
        await self.layout.ensure()
        await self.originals.ensure()

    async def _guarded(self, action: str, call: Callable[[], Awaitable[Any]], empty: Any) -> Any:
        """Run a read; a missing index (someone is wiping it) reads as empty and is set up next time."""
        await self._ready()
        try:
            with self.connection.errors(action, self.index):
                return await call()
        except IndexMissing:
            self.layout.ready = False
            return empty

    async def _search(self, action: str, **request: Any) -> dict[str, Any]:
        return await self._guarded(
            action,
            # a shard without any copy fails the search (503) instead of answering without its chunks
            lambda: self.connection.client.search(index=self.index, allow_partial_search_results=False, **request),
            EMPTY_RESPONSE,
        )

    async def _walk(
        self,
        action: str,
        query: dict[str, Any],
        sort: list[Any],
        *,
        offset: int = 0,
        limit: int | None = None,
        **request: Any,
    ) -> tuple[list[Hit], int]:
        """Hits ``offset .. offset+limit`` (all when ``limit`` is None) in ``sort`` order, and the total.

        Within Elasticsearch's result window this is one search; beyond it, pages of
        ``search_after`` (``sort`` must end in a unique field)."""
        window = queries.MAX_RESULT_WINDOW
        if limit is not None and offset + limit <= window:
            response = await self._search(
                action, query=query, sort=sort, from_=offset, size=limit, track_total_hits=True, **request
            )
            return response["hits"]["hits"], int(response["hits"]["total"]["value"])
        end = None if limit is None else offset + limit
        hits: list[Hit] = []
        seen, total, after = 0, 0, None
        while end is None or seen < end:
            page = await self._search(
                action,
                query=query,
                sort=sort,
                size=window,
                track_total_hits=after is None,
                **({"search_after": after} if after is not None else {}),
                **request,
            )
            if after is None:
                total = int(page["hits"]["total"]["value"])
            batch = page["hits"]["hits"]
            wanted_from = max(offset - seen, 0)
            wanted_to = len(batch) if end is None else min(end - seen, len(batch))
            hits.extend(batch[wanted_from:wanted_to])
            seen += len(batch)
            if len(batch) < window:
                break
            after = batch[-1]["sort"]
        return hits, total

    # --- the embedding model -------------------------------------------------------------------
    async def embedding_identity(self) -> EmbeddingIdentity | None:
        """Read from Elasticsearch (a mapping request); `query_identity` is the searches' cheap one."""

        async def read() -> EmbeddingIdentity | None:
            index, identity = await self.layout.identity_with_index(self.index)
            self.served_identity.learn(index, identity)
            return identity

        return await self._guarded("reading the embedding model", read, None)

    async def query_identity(self) -> EmbeddingIdentity | None:
        """The model of the index searches are served from, as last seen (`served_identity.py`); a kNN
        leg whose hits come from another index says so (`searched_model.py`)."""
        return await self._guarded("reading the embedding model", self.served_identity.current, None)

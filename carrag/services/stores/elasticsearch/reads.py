"""The plumbing every read of `ElasticsearchStore` goes through: setting the index up on first use, a
missing index (someone is wiping it) read as empty, searches that fail rather than answer without a
shard, walks past the result window."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.layout import IndexLayout
from carrag.services.stores.elasticsearch.originals import OriginalsIndex

EMPTY_RESPONSE: dict[str, Any] = {"hits": {"hits": [], "total": {"value": 0}}}

Hit = dict[str, Any]


class IndexReads:
    def __init__(self, connection: Connection, layout: IndexLayout, originals: OriginalsIndex) -> None:
        self.connection = connection
        self.layout = layout
        self.originals = originals
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
        """Hits ``offset .. offset+limit`` (all when ``limit`` is None) in ``sort`` order, and the total.

        Within Elasticsearch's result window this is one search; beyond it, pages of
        ``search_after`` (``sort`` must end in a unique field)."""
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

"""The reader's side of the visibility protocol (`versions.py`): which search hits may be returned.

A hit may be returned only if its version was live *before the search began* and still is after
it. Live after: a real-time multi-get of the hits' source records, after the search. Live before:
the chunks of a version being written can become searchable piecemeal (a scheduled refresh may
fall in the middle of its bulk request), so a version that was flipped between the start of the
search and the check may have been seen only in part. A version flipped before the search began
had been searchable whole since before its flip (step 1 waits for that), and one still live after
the search has not started to be deleted: such a hit is safe.

"Before the search began" is known from this process's own earlier checks: each check remembers
every source record it saw with its concurrency token (``_seq_no``, ``_primary_term``; it changes
with every flip and never repeats) and the monotonic time of the check. If a hit's record carries
the same token as a check that completed before this search started, the record did not change in
between. When a hit cannot be confirmed this way (first sight of that source in this process, or a
recent flip), the search is run again: now the check just made precedes it. Versions found not
live are left out of the repeated search. A process pays the extra search once per source change
it meets, not per search.

The check may read more than the records: the store asks it for the chunks around each hit too
(`ElasticsearchStore`, for neighbour expansion), so a search needs no round trip after it. What
the check read comes back with the hits of the attempt it confirmed (`LiveHits.chunks`).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from carrag.services.stores.elasticsearch.live_state import LiveToken
from carrag.services.stores.elasticsearch.mapping import record_key

logger = logging.getLogger(__name__)

ATTEMPTS = 8
REMEMBERED_SOURCES = 200_000

Hit = dict[str, Any]


@dataclass(slots=True)
class LiveCheck:
    """What one check read: the hits' source records, and any chunks read with them (``_id → _source``)."""

    tokens: dict[str, LiveToken]
    chunks: dict[str, dict[str, Any]] = field(default_factory=dict)
    read_for: frozenset[str] = frozenset()  # ids of the hits the chunks were read for


@dataclass(slots=True)
class LiveHits:
    hits: list[Hit]  # best first, every one of a live version
    chunks: dict[str, dict[str, Any]]  # what the check that confirmed them read beside the records
    read_for: frozenset[str] = frozenset()  # ... and for which hits (`LiveCheck.read_for`)


Search = Callable[[int, set[str]], Awaitable[list[Hit]]]
Check = Callable[[list[Hit]], Awaitable[LiveCheck]]


class LiveFilter:
    def __init__(self, check: Check) -> None:
        self._check = check
        self._seen: OrderedDict[str, tuple[LiveToken, float]] = OrderedDict()  # source → (token, checked at)

    async def hits(self, search: Search, k: int) -> LiveHits:
        """The best ``k`` hits of ``search(size, stale_versions)`` that belong to live versions."""
        stale: set[str] = set()
        confirmed: list[Hit] = []
        checked = LiveCheck({})
        for _ in range(ATTEMPTS):
            started = time.monotonic()
            hits = await search(k, stale)
            checked = await self._check(hits)
            tokens = checked.tokens
            confirmed, unconfirmed, dropped = [], [], []
            for hit in hits:
                source = hit["_source"]
                token = tokens.get(record_key(source))
                if token is None or token.document_id != source["document_id"]:
                    dropped.append(hit)
                elif self._unchanged_since(record_key(source), token, started):
                    confirmed.append(hit)
                else:
                    unconfirmed.append(hit)
            self._remember(tokens)
            stale.update(hit["_source"]["document_id"] for hit in dropped)
            stale.difference_update(token.document_id for token in tokens.values())  # a pending one went live
            short = bool(dropped) and len(hits) >= k and len(confirmed) + len(unconfirmed) < k
            # a dropped hit of a source live under another version: it flipped after the search began
            flipped = any(record_key(hit["_source"]) in tokens for hit in dropped)
            if not unconfirmed and not short and not flipped:
                return LiveHits(confirmed[:k], checked.chunks, checked.read_for)
        if unconfirmed:
            logger.warning("search hits left out: their sources kept changing", extra={"hits": len(unconfirmed)})
        return LiveHits(confirmed[:k], checked.chunks, checked.read_for)

    def _unchanged_since(self, source_id: str, token: LiveToken, started: float) -> bool:
        seen = self._seen.get(source_id)
        return seen is not None and seen[0] == token and seen[1] < started

    def _remember(self, tokens: dict[str, LiveToken]) -> None:
        now = time.monotonic()
        for source_id, token in tokens.items():
            seen = self._seen.get(source_id)
            if seen is None or seen[0] != token:  # keep the earliest time this token was seen
                self._seen[source_id] = (token, now)
            self._seen.move_to_end(source_id)
        while len(self._seen) > REMEMBERED_SOURCES:
            self._seen.popitem(last=False)

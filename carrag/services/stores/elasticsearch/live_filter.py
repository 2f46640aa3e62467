"""How a search decides which version of a document is live: the reader's side of the visibility
protocol (`versions.py`).

A version is live exactly while its source's record names it, and a writer flips that record only
once every chunk of the new version is searchable on every shard copy. After each search one
real-time multi-get reads the records of the hits' sources, and a hit is kept only if its version is
the one its record names: never two versions of a source, never a version being written or abandoned
(no record names it), never one replaced or deleted before the check (the record is flipped before
the replace or delete is acknowledged). When a dropped hit's source is live under another version, a
flip fell within the search, which may have seen that version in part; dropped hits may also have
crowded out live ones. Either way the search runs again without the dropped versions (the new version
was flipped before the repeat began, so it is searched whole). A version published during the search
whose source had no other version among the hits may come back in part, every chunk of it live.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from carrag.services.stores.elasticsearch.mapping import record_key

logger = logging.getLogger(__name__)

ATTEMPTS = 4

Hit = dict[str, Any]
Search = Callable[[int, frozenset[str]], Awaitable[list[Hit]]]  # (size, versions to leave out) → hits
LiveVersions = Callable[[Sequence[str]], Awaitable[dict[str, str]]]  # source keys → live document_id


async def live_hits(search: Search, live_versions: LiveVersions, k: int) -> list[Hit]:
    """The best ``k`` hits of ``search`` that belong to live versions."""
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

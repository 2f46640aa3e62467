"""Neighbour windows for expansion, without a round trip after the search: stored in the hits, or
read with the live check.

A chunk written since schema 3 stores its neighbours (``STORED_NEIGHBOURS`` on each side,
`mapping.py`), and the search legs fetch them with the hit: such a hit, when the stored radius
covers ``NEIGHBOUR_WINDOW``, needs no window read at all (`covered` leaves it out) and `scored`
hands its stored neighbours on. They are what a read of its window would return: the stored
neighbours are the chunks of the hit's own version, which never change, and the hit is returned
only if its version was found live (the argument below, without the race: nothing is read).

For the other hits (chunks written before, or a wider ``NEIGHBOUR_WINDOW``): each search leg
checks its hits against the source records with a real-time multi-get (`live_filter.py`). The
chunks around each hit (``neighbour_window`` on each side; ids are derived from the document id and
index, so no search is needed) are asked for in that same multi-get and handed back on the hit
(`ScoredChunk.neighbours`); `SearchService` then stitches passages from them and asks
`get_windows` only for winners that came without.

Why this shows nothing `get_windows` would not: a neighbour's id names the hit's own version
(``document_id``), so it can only be a chunk of that version, which is returned only if the check
found it live; and a real-time get returns a chunk as it is at that moment, or nothing once its
version has been replaced and its chunks deleted (the passage is then shorter, as it would be had
`get_windows` run a moment later).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from carrag.services.ids import chunk_id
from carrag.services.models import ScoredChunk
from carrag.services.retrieval.fusion import reciprocal_rank_fusion
from carrag.services.stores.elasticsearch.live_filter import LiveHits
from carrag.services.stores.elasticsearch.mapping import stored_neighbours, stores_neighbours, to_chunk

MAX_PREFETCHED_CHUNKS = 1000  # per check, whatever the share
FUSION_K = 60  # the usual RRF constant: only to guess the winners whose windows to read

Hit = dict[str, Any]


class PrefetchedWindows:
    """``radius``: chunks on each side (``NEIGHBOUR_WINDOW``). ``share``: the part of a leg's hits, best
    first, whose windows are read (``1 / RETRIEVAL_K_MULTIPLIER``: as many as the search keeps; each
    further chunk costs Elasticsearch a ``_source`` read, measured in docs/benchmarks.md). Winners
    outside it are expanded by `get_windows`."""

    def __init__(self, radius: int, share: float = 1.0, max_chunks: int = MAX_PREFETCHED_CHUNKS) -> None:
        self.radius = max(radius, 0)
        self.share = share
        self.max_hits = max_chunks // (2 * self.radius) if self.radius else 0

    def covered(self, hits: list[Hit]) -> list[Hit]:
        """The hits whose windows are read: of the best ``share`` of them, those that do not store
        their neighbours, within the chunk budget."""
        if not self.radius:
            return []
        return self._to_read(hits[: math.ceil(len(hits) * self.share)])

    def covered_across(self, legs: list[list[Hit]]) -> list[Hit]:
        """The hits whose windows are read when the legs are checked together (`shared_check.py`):
        as many as one leg's share, the best by reciprocal rank fusion of the legs (k = 60), i.e. the
        likely winners. A guess only: a winner outside it is expanded by `get_windows`."""
        if not self.radius:
            return []
        by_id = {hit["_id"]: hit for hits in legs for hit in hits}
        fused = reciprocal_rank_fusion({str(n): [hit["_id"] for hit in hits] for n, hits in enumerate(legs)}, FUSION_K)
        wanted = max((math.ceil(len(hits) * self.share) for hits in legs), default=0)
        return self._to_read([by_id[item.key] for item in fused[:wanted]])

    def around(self, covered: list[Hit], held: set[str]) -> list[str]:
        """Ids of the chunks around ``covered`` that are not among ``held``."""
        return [neighbour for hit in covered for neighbour in self._around(hit["_source"]) if neighbour not in held]

    def wanted(self, hits: list[Hit]) -> list[str]:
        """Ids of the chunks around the covered hits that the hits themselves do not hold."""
        return self.around(self.covered(hits), {hit["_id"] for hit in hits})

    def scored(self, found: LiveHits, score: Callable[[Hit], float]) -> list[ScoredChunk]:
        """The hits as scored chunks; a hit that stores its neighbours, or whose window was read,
        carries them."""
        by_id = {**found.chunks, **{hit["_id"]: hit["_source"] for hit in found.hits}}
        scored = []
        for hit in found.hits:
            chunk = to_chunk(hit["_source"])
            stored = stored_neighbours(hit["_source"], self.radius, chunk) if self.radius else None
            if stored is not None:
                scored.append(ScoredChunk(chunk, score(hit), neighbour_radius=self.radius, neighbours=tuple(stored)))
                continue
            if hit["_id"] not in found.read_for:
                scored.append(ScoredChunk(chunk, score(hit)))
                continue
            neighbours = tuple(to_chunk(by_id[n]) for n in self._around(hit["_source"]) if n in by_id)
            scored.append(ScoredChunk(chunk, score(hit), neighbour_radius=self.radius, neighbours=neighbours))
        return scored

    def _to_read(self, hits: list[Hit]) -> list[Hit]:
        """Those of ``hits`` that store no neighbours this wide, within the chunk budget."""
        return [hit for hit in hits if not stores_neighbours(hit["_source"], self.radius)][: self.max_hits]

    def _around(self, source: dict[str, Any]) -> list[str]:
        centre = source["chunk_index"]
        return [
            chunk_id(source["document_id"], index)
            for index in range(max(centre - self.radius, 0), centre + self.radius + 1)
            if index != centre
        ]

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
from carrag.services.models import ScoredChunk, StoredChunk
from carrag.services.retrieval.fusion import reciprocal_rank_fusion
from carrag.services.stores.elasticsearch.live_filter import LiveHits
from carrag.services.stores.elasticsearch.mapping import neighbour_chunks, stores_neighbours, to_chunk

MAX_PREFETCHED_CHUNKS = 1000  # per check, whatever the share
FUSION_K = 60  # the usual RRF constant: only to guess the winners whose windows to read

Hit = dict[str, Any]

_NEIGHBOURS_SLOT: Any = ScoredChunk.__dict__["neighbours"]  # where `ScoredChunk` keeps them


class StoredWindowHit(ScoredChunk):
    """A hit whose JSON stores its neighbours (``stored``): they become chunks (`neighbour_chunks`)
    when ``neighbours`` is first read, as `stored_neighbours` would have made them at once. Expansion
    reads them for the winners only (a hybrid search keeps ``top_k`` of about ``2 × depth`` hits),
    so the other hits never pay for the conversion (docs/benchmarks.md, "Stored neighbours made
    chunks on demand"). Equal to the `ScoredChunk` made with them; a copy is one."""

    __slots__ = ("_stored",)

    def __init__(
        self,
        chunk: StoredChunk,
        score: float,
        neighbour_radius: int | None = None,
        neighbours: tuple[StoredChunk, ...] = (),
        *,
        stored: dict[str, Any] | None = None,
    ) -> None:
        self.chunk, self.score, self.neighbour_radius = chunk, score, neighbour_radius
        _NEIGHBOURS_SLOT.__set__(self, neighbours)
        self._stored = stored if neighbour_radius is not None else None

    @property
    def neighbours(self) -> tuple[StoredChunk, ...]:
        stored = self._stored
        if stored is not None:
            assert self.neighbour_radius is not None  # set with ``stored`` (__init__)
            _NEIGHBOURS_SLOT.__set__(self, tuple(neighbour_chunks(stored, self.neighbour_radius)))
            self._stored = None
        neighbours: tuple[StoredChunk, ...] = _NEIGHBOURS_SLOT.__get__(self)
        return neighbours

    @neighbours.setter
    def neighbours(self, value: tuple[StoredChunk, ...]) -> None:
        self._stored = None
        _NEIGHBOURS_SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScoredChunk):
            return NotImplemented
        return (self.chunk, self.score, self.neighbour_radius, self.neighbours) == (
            other.chunk,
            other.score,
            other.neighbour_radius,
            other.neighbours,
        )

    __hash__ = None  # type: ignore[assignment]  # as ScoredChunk's

    def __reduce__(self) -> tuple[type[ScoredChunk], tuple[Any, ...]]:
        return ScoredChunk, (self.chunk, self.score, self.neighbour_radius, self.neighbours)


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
        """The hits as scored chunks; a hit that stores its neighbours (made chunks when read:
        `StoredWindowHit`), or whose window was read, carries them."""
        by_id: dict[str, dict[str, Any]] | None = None
        scored: list[ScoredChunk] = []
        for hit in found.hits:
            source = hit["_source"]
            chunk = to_chunk(source)
            if self.radius and stores_neighbours(source, self.radius):
                scored.append(StoredWindowHit(chunk, score(hit), self.radius, stored=source))
            elif hit["_id"] not in found.read_for:
                scored.append(ScoredChunk(chunk, score(hit)))
            else:
                if by_id is None:
                    by_id = {**found.chunks, **{other["_id"]: other["_source"] for other in found.hits}}
                neighbours = tuple(to_chunk(by_id[n]) for n in self._around(source) if n in by_id)
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

"""Reciprocal Rank Fusion, written in Python (seed 001: Elasticsearch's built-in RRF needs a paid
licence, and writing it once here makes every store fuse the same way).

Each leg contributes ``1 / (k + rank)`` (rank is 1-based) for every item it returned; an item's
fused score is the sum over the legs that found it. Ties keep the order in which items were first
seen, legs taken in the order given.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)
class FusedItem(Generic[K]):
    key: K
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # leg name → 1-based rank in that leg


def reciprocal_rank_fusion(legs: Mapping[str, Sequence[K]], k: int = 60) -> list[FusedItem[K]]:
    fused: dict[K, FusedItem[K]] = {}
    for leg, keys in legs.items():
        for rank, key in enumerate(keys, start=1):
            item = fused.get(key)
            if item is None:
                item = fused[key] = FusedItem(key, 0.0)
            if leg in item.ranks:  # a leg listing the same key twice counts once, at its best rank
                continue
            item.ranks[leg] = rank
            item.score += 1.0 / (k + rank)
    return sorted(fused.values(), key=lambda item: item.score, reverse=True)

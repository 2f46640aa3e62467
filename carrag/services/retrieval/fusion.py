"""Reciprocal Rank Fusion in Python (Elasticsearch's RRF needs a paid licence; one implementation makes
every store fuse the same way): ``1 / (k + rank)`` summed over the legs; ties keep first-seen order.
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

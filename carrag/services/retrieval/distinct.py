"""One hit per passage text: hits are compared by `ids.normalised_text` above the stores, and the best
ranked of each text stays. With ``limit`` it stops reading once it has that many.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from carrag.services.ids import normalised_text

T = TypeVar("T")


def distinct_by_text(items: Iterable[T], text_of: Callable[[T], str], limit: int | None = None) -> list[T]:
    seen: set[str] = set()
    kept: list[T] = []
    if limit is not None and limit <= 0:
        return kept
    for item in items:
        key = normalised_text(text_of(item))
        if key not in seen:
            seen.add(key)
            kept.append(item)
            if len(kept) == limit:
                break
    return kept

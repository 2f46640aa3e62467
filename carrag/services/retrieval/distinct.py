"""One hit per passage text: the same words stored twice (a copy under another source id, a
document that repeats a paragraph, copies allowed by ALLOW_DUPLICATES) are shown once.

Hits are compared by their normalised text (`carrag.services.ids.normalised_text`: Unicode NFKC,
whitespace runs collapsed, case kept), above the stores, so both backends behave the same. The
first hit of each text, the best ranked, stays. With ``limit``, it stops at that many hits: the first
``limit`` of the whole answer, without reading (or normalising) the rest.
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

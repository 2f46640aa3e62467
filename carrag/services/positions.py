"""Where a document's text is drawn on its pages (PDFs), and the regions a span of the text covers.

The PDF parser records pieces of the document text with their rectangles: each line's run of words
of a page's text layer, and each box of text read by OCR (`parsers/pdf_positions.py`). Chunking asks
for the regions of each chunk's span (`TextPositions.regions`): the pieces the span touches (of a
piece it holds only part of, that share of its width), merged per line into one rectangle, rounded
outwards to whole points; at most `MAX_REGIONS` per chunk (beyond that, neighbouring lines of a page
are merged). The stores keep them with the chunk as JSON, ``[[page, start, end, x0, y0, x1, y1], ...]``
(`encode_regions`).

The pieces are kept in flat arrays: a 600-page manual has tens of thousands of lines.
"""

from __future__ import annotations

import bisect
import json
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Region:
    """Where part of a chunk is drawn on a PDF page: the rectangle of one line's stretch of it, in PDF
    points from the top-left of the page as stored (unrotated, within its crop box), rounded outwards,
    and which characters of the chunk's span (offsets from ``char_start``) that stretch holds."""

    page: int
    start: int
    end: int
    x0: int
    y0: int
    x1: int
    y1: int


Rect = tuple[float, float, float, float]

# A chunk of the largest CHUNK_SIZE in narrow columns stays within this; merging beyond it keeps
# what is stored per chunk small without losing where the text is.
MAX_REGIONS = 64


class TextPositions:
    """Pieces of the document text with their page, line and rectangle, added in text order."""

    def __init__(self) -> None:
        self._starts = array("q")
        self._ends = array("q")
        self._lines = array("l")  # page, block, line of each piece
        self._boxes = array("f")  # x0, y0, x1, y1 of each piece

    def __len__(self) -> int:
        return len(self._starts)

    def add(self, page: int, start: int, end: int, block: int, line: int, rect: Rect) -> None:
        """Characters ``[start, end)`` of the text, on ``line`` of ``block`` of ``page``, drawn in
        ``rect``. Pieces come in text order and do not overlap."""
        if self._starts and start < self._ends[-1]:
            raise ValueError(f"piece at {start} overlaps the previous one (ending at {self._ends[-1]})")
        self._starts.append(start)
        self._ends.append(end)
        self._lines.extend((page, block, line))
        self._boxes.extend(rect)

    def regions(self, start: int, end: int) -> list[Region]:
        """The regions of the text span ``[start, end)``: one per line it touches, with the offsets
        (from ``start``) of the characters of its span on that line."""
        merged: dict[tuple[int, ...], list[float]] = {}  # (page, block, line) -> [start, end, x0, y0, x1, y1]
        index = max(bisect.bisect_right(self._starts, start) - 1, 0)
        while index < len(self._starts) and self._starts[index] < end:
            if self._ends[index] > start:
                key = tuple(self._lines[3 * index : 3 * index + 3])
                x0, y0, x1, y1 = self._boxes[4 * index : 4 * index + 4]
                first, last = self._starts[index], self._ends[index]
                low, high = max(first, start), min(last, end)
                if (low, high) != (first, last):  # part of a piece: its share of the width, left to right
                    width = (x1 - x0) / (last - first)
                    x0, x1 = x0 + (low - first) * width, x0 + (high - first) * width
                piece = [low, high, x0, y0, x1, y1]
                found = merged.get(key)
                merged[key] = piece if found is None else _union(found, piece)
            index += 1
        regions = [
            Region(page, int(s) - start, int(e) - start, math.floor(x0), math.floor(y0), math.ceil(x1), math.ceil(y1))
            for (page, _, _), (s, e, x0, y0, x1, y1) in merged.items()
        ]
        return capped(regions)


def _union(a: list[float], b: list[float]) -> list[float]:
    return [min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]), max(a[4], b[4]), max(a[5], b[5])]


def capped(regions: list[Region], limit: int = MAX_REGIONS) -> list[Region]:
    """``regions`` with neighbours on the same page merged pairwise, round after round, until at most
    ``limit`` are left (or one per page: then the first ``limit`` pages')."""
    while len(regions) > limit:
        fewer = _merge_pairs(regions)
        if len(fewer) == len(regions):
            return regions[:limit]
        regions = fewer
    return regions


def _merge_pairs(regions: list[Region]) -> list[Region]:
    """Each region merged with the next one when both are on the same page."""
    merged: list[Region] = []
    pending: Region | None = None
    for region in regions:
        if pending is not None and pending.page == region.page:
            merged.append(_enclosing(pending, region))
            pending = None
        else:
            if pending is not None:
                merged.append(pending)
            pending = region
    if pending is not None:
        merged.append(pending)
    return merged


def _enclosing(a: Region, b: Region) -> Region:
    return Region(
        a.page,
        min(a.start, b.start),
        max(a.end, b.end),
        min(a.x0, b.x0),
        min(a.y0, b.y0),
        max(a.x1, b.x1),
        max(a.y1, b.y1),
    )


def encode_regions(regions: Iterable[Region]) -> list[list[int]]:
    return [[r.page, r.start, r.end, r.x0, r.y0, r.x1, r.y1] for r in regions]


def encode_regions_json(regions: list[Region]) -> str | None:
    """The stored form (None: no regions)."""
    return json.dumps(encode_regions(regions), separators=(",", ":")) if regions else None


def decode_regions(stored: Any) -> list[Region]:
    """Regions from their stored form (a JSON string or its list; None or empty: none)."""
    if not stored:
        return []
    rows = json.loads(stored) if isinstance(stored, str) else stored
    return [Region(*(int(value) for value in row)) for row in rows]

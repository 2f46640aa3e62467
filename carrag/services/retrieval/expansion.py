"""Neighbour expansion: each winning chunk with the chunks around it; windows that overlap or touch in one
document merge into one passage, stitched by character offsets so shared overlap appears once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from carrag.services.models import ScoredChunk, StoredChunk


@dataclass(slots=True)
class Passage:
    """One expanded source: the winners it covers (best first) and the stitched window text."""

    winners: list[int]  # positions in the ranked winner list
    document_id: str
    first_index: int
    last_index: int
    chunks: list[StoredChunk] = field(default_factory=list)

    @property
    def text(self) -> str:
        return stitch(self.chunks)


def stitch(chunks: Sequence[StoredChunk]) -> str:
    """Join consecutive chunks of one document, dropping the characters they share (and the table
    header a chunk repeats, which the passage already holds: only the first chunk keeps it)."""
    if not chunks:
        return ""
    ordered = sorted(chunks, key=lambda c: c.chunk_index)
    parts = [ordered[0].text]
    covered_until = ordered[0].char_end
    for chunk in ordered[1:]:
        if chunk.char_end <= covered_until:
            continue  # entirely inside what we already have
        span_text = chunk.text[len(chunk.text) - (chunk.char_end - chunk.char_start) :]
        if chunk.char_start < covered_until:
            parts.append(span_text[covered_until - chunk.char_start :])
        else:
            parts.append("\n" + span_text)  # the gap between them was whitespace only
        covered_until = chunk.char_end
    return "".join(parts)


def windows_in_hand(
    winners: Sequence[StoredChunk], found: Mapping[tuple[str, int], ScoredChunk], radius: int
) -> tuple[list[StoredChunk], list[tuple[str, int]]]:
    """The neighbours the store returned with the winners' hits (`ScoredChunk.neighbours`), and the
    winners still to be asked for (`Store.get_windows`): those that came without a window this wide."""
    neighbours: list[StoredChunk] = []
    missing: list[tuple[str, int]] = []
    for winner in winners:
        hit = found.get(winner.key)
        if hit is None or hit.neighbour_radius is None or hit.neighbour_radius < radius:
            missing.append(winner.key)
            continue
        neighbours.extend(n for n in hit.neighbours if abs(n.chunk_index - winner.chunk_index) <= radius)
    return neighbours, missing


def build_passages(winners: Sequence[StoredChunk], neighbours: Sequence[StoredChunk], radius: int) -> list[Passage]:
    """Group winners into passages; ``neighbours`` holds every chunk of every window (any order)."""
    by_key = {chunk.key: chunk for chunk in neighbours}
    for chunk in winners:
        by_key.setdefault(chunk.key, chunk)
    # One passage per winner, folded until nothing overlaps or touches (a merge can make a passage reach
    # another one), so no chunk ever lands in two passages.
    merged = [
        Passage([position], winner.document_id, winner.chunk_index - radius, winner.chunk_index + radius)
        for position, winner in enumerate(winners)
    ]
    while True:
        folded = _fold_once(merged)
        if len(folded) == len(merged):
            break
        merged = folded
    for passage in merged:
        passage.winners.sort()
        passage.chunks = [
            by_key[(passage.document_id, index)]
            for index in range(passage.first_index, passage.last_index + 1)
            if (passage.document_id, index) in by_key
        ]
    merged.sort(key=lambda p: p.winners[0])
    return merged


def _fold_once(passages: list[Passage]) -> list[Passage]:
    merged: list[Passage] = []
    for passage in passages:
        host = next(
            (
                m
                for m in merged
                if m.document_id == passage.document_id
                and passage.first_index <= m.last_index + 1
                and passage.last_index >= m.first_index - 1
            ),
            None,
        )
        if host is None:
            merged.append(passage)
        else:
            host.winners.extend(passage.winners)
            host.first_index = min(host.first_index, passage.first_index)
            host.last_index = max(host.last_index, passage.last_index)
    return merged

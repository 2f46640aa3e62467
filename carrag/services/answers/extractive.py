"""The extractive answer: the unit the model finds most likely to answer, and the units of the same
passage it finds at least half as likely (``AnswerModel.companion``), each quoted as plain text and
followed by its ``[Source n]``.

A table row is quoted with its column names, a list item with its lead-in, a definition with its
term, a command with its description (``Unit.display``). Units of one passage keep their document
order. A unit inside another
chosen one (an item of a chosen list) is not quoted twice, and a lead-in ending with a colon is quoted
with what it announces.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from carrag.services.answers.features import Candidate

MAX_UNITS = 3


@dataclass(slots=True)
class ExtractiveAnswer:
    text: str
    chosen: list[Candidate]
    highlights: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # 0-based source → offsets


def _overlaps(candidate: Candidate, chosen: Sequence[Candidate]) -> bool:
    unit = candidate.unit
    return any(
        other.source == candidate.source and unit.start < other.unit.end and unit.end > other.unit.start
        for other in chosen
    ) or any(other.unit.display.lower() == unit.display.lower() for other in chosen)


def announced(best: Candidate, ranked: Sequence[Candidate]) -> Candidate:
    """A lead-in ("install it with pip:", "as follows:") is quoted with what it announces: the most probable
    of the units read with it as their label (a list, a code block, a table row)."""
    if not best.unit.text.endswith(":"):
        return best
    return next((c for c in ranked if c.source == best.source and c.unit.label == best.unit.display), best)


def chosen_units(ranked: Sequence[Candidate], companion: float, limit: int = MAX_UNITS) -> list[Candidate]:
    """The best unit, and the units of its passage the model finds at least ``companion`` times as likely
    to be the answer, not repeating what is chosen."""
    if not ranked:
        return []
    best = announced(ranked[0], ranked)
    chosen = [best]
    for candidate in ranked[1:]:
        if len(chosen) >= limit or candidate.probability < companion * ranked[0].probability:
            break
        if candidate.source == best.source and not _overlaps(candidate, chosen):
            chosen.append(candidate)
    return chosen


def extract_answer(ranked: Sequence[Candidate], companion: float) -> ExtractiveAnswer:
    chosen = chosen_units(ranked, companion)
    if not chosen:
        return ExtractiveAnswer("", [])
    source_order = list(dict.fromkeys(candidate.source for candidate in chosen))
    ordered = sorted(chosen, key=lambda c: (source_order.index(c.source), c.unit.start))
    block = any("\n" in c.unit.display or c.unit.kind in ("row", "record", "list") for c in ordered)
    separator = "\n" if block and len(ordered) > 1 else " "
    text = separator.join(f"{candidate.unit.display} [Source {candidate.source + 1}]" for candidate in ordered)
    highlights: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for candidate in ordered:
        highlights[candidate.source].append((candidate.unit.start, candidate.unit.end))
    return ExtractiveAnswer(text, ordered, dict(highlights))

"""What the model sees: every listed source, cleaned and fitted to the context budget.

Each source gets an equal share of ``MAX_CONTEXT_CHARS`` (a short source gives what it does not
use to the ones after it). A source that fits its share goes in whole; a longer one is cut down to
its most probable answer units (the answer model's ranking), kept in document order and joined
by ``…``. So every listed source reaches the model and can be cited,
and a citation can only point at text the model was given (the grounding check reads the same
text). Markdown link targets, images and page chrome (navigation, cookie and share lines) are
stripped: they cost context and invite the model to cite them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from carrag.services.answers.features import Candidate, Reading

GAP = " … "
HEADER_ALLOWANCE = 80  # "[Source n: filename]\n" plus the separator between sources

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^)]*\))*(?:\s+\"[^\"]*\")?\)")
_BARE_TARGET = re.compile(r"<https?://[^>]+>")
_CHROME_LINE = re.compile(
    r"^\s*(?:skip to (?:main )?content|menu|search|share|tweet|print|log ?in|sign ?in|sign up|subscribe|"
    r"accept(?: all)?(?: cookies)?|cookie.*|we use cookies.*|back to top|previous|next|home|close|"
    r"page \d+(?: of \d+)?|advertisement|related articles?|read more|edit|\d+ comments?)\s*$",
    re.I,
)
_LINK_ONLY_LINE = re.compile(r"^\s*(?:[-*•|]\s*)?(?:\[[^\]]*\]\([^)]*\)\s*[|·•,]?\s*)+$")


def clean_for_model(text: str) -> str:
    """Text without link targets, images and chrome lines; white space inside lines kept."""
    lines = []
    for line in text.split("\n"):
        if _CHROME_LINE.match(line) or (_LINK_ONLY_LINE.match(line) and line.count("](") >= 2):
            continue
        line = _IMAGE.sub(lambda m: m.group(1), line)
        line = _LINK.sub(lambda m: m.group(1), line)
        lines.append(_BARE_TARGET.sub("", line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@dataclass(slots=True)
class FittedSource:
    filename: str
    text: str  # what the model sees of this source
    units: list[Candidate] = field(default_factory=list)  # the answer units it contains
    whole: bool = True


def fit_context(reading: Reading, filenames: Sequence[str], max_chars: int) -> list[FittedSource]:
    """``reading``'s candidates ranked (their probabilities set) by the answer model."""
    fitted: list[FittedSource] = []
    remaining = max_chars
    count = len(reading.passages)
    for source, (passage, filename) in enumerate(zip(reading.passages, filenames, strict=True)):
        share = max(remaining // (count - source) - HEADER_ALLOWANCE, 0)
        cleaned = clean_for_model(passage.text)
        units = reading.of_source(source)
        if len(cleaned) <= share:
            fitted.append(FittedSource(filename, cleaned, units, whole=True))
        else:
            fitted.append(_best_units(filename, units, share))
        remaining -= len(fitted[-1].text) + HEADER_ALLOWANCE
    return fitted


def _best_units(filename: str, units: list[Candidate], share: int) -> FittedSource:
    chosen: list[Candidate] = []
    used = 0
    for candidate in sorted(units, key=lambda c: -c.probability):
        cost = len(candidate.unit.display) + len(GAP)
        if used + cost > share or any(_inside(candidate, other) for other in chosen):
            continue
        chosen.append(candidate)
        used += cost
    chosen.sort(key=lambda c: c.unit.start)
    parts: list[str] = []
    for index, candidate in enumerate(chosen):
        if index:
            parts.append(GAP)
        parts.append(candidate.unit.display)
    return FittedSource(filename, "".join(parts), chosen, whole=False)


def _inside(candidate: Candidate, other: Candidate) -> bool:
    return candidate.unit.start < other.unit.end and candidate.unit.end > other.unit.start

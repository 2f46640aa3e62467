"""Values in text: numbers with their sign, format and unit, ranges, dates.

``-32768 to +32767`` holds the values -32768 and 32767 (a range); ``1,000 ms`` the value 1000 with
the unit ms; ``2024-06-30`` one date. Grounding compares an answer's values with the sources' (a
value must be found with the same sign and magnitude, and the same unit when both give one); the
answer model asks whether a unit holds a value, a measure or a date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from carrag.services.answers.evidence import NUMBER_WORDS

# each unit (normalised) and the ways it is written ("in", "c", "f" alone are words, not units)
_UNIT_NAMES = {
    "%": "% percent",
    "byte": "byte bytes",
    "bit": "bit bits",
    "kb": "kb kib kilobyte kilobytes",
    "mb": "mb mib megabyte megabytes",
    "gb": "gb gib gigabyte gigabytes",
    "ms": "ms millisecond milliseconds",
    "us": "us µs microseconds",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hour hours",
    "day": "day days",
    "week": "week weeks",
    "month": "month months",
    "year": "year years",
    "in": "inch inches",
    "lb": "lb lbs",
    "c": "°c",
    "f": "°f",
}
_UNITS = {
    name: name
    for name in [
        "tb",
        "ns",
        "px",
        "pt",
        "em",
        "mm",
        "cm",
        "m",
        "km",
        "hz",
        "khz",
        "mhz",
        "ghz",
        "kg",
        "g",
        "v",
        "w",
        "kw",
        "mph",
        "psi",
    ]
}
_UNITS |= {written: unit for unit, names in _UNIT_NAMES.items() for written in names.split()}
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
]
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b(1[5-9]|20)\d{2}\b|\b("
    + "|".join(_MONTHS)
    + r")\.?\s+\d{1,2}\b|\b\d{1,2}(st|nd|rd|th)?\s+("
    + "|".join(_MONTHS)
    + r")\b",
    re.I,
)
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-+−–])?(?P<body>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d])"
    r"(?:\s?(?P<unit>%|°[CF]|[A-Za-zµ]{1,12}\b))?"
)
_SPELLED = re.compile(
    r"\b(?P<tens>" + "|".join(NUMBER_WORDS) + r")(?:[- ](?P<units>" + "|".join(list(NUMBER_WORDS)[1:10]) + r"))?\b"
    r"(?:\s(?P<unit>[A-Za-z]{1,12})\b)?",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Value:
    number: float
    unit: str | None = None  # normalised (``_UNITS``); None when the number stands alone

    def matches(self, other: Value) -> bool:
        if self.number != other.number:
            return False
        return self.unit is None or other.unit is None or self.unit == other.unit


def values(text: str, *, spelled: bool = False) -> list[Value]:
    """Every number in ``text`` with its sign and unit, with ``spelled`` also those spelled out ("thirty
    days"); an ISO date counts as one value (its digits)."""
    found: list[Value] = []
    masked = text
    for match in _ISO_DATE.finditer(text):
        found.append(Value(float(match.group(0).replace("-", ""))))
        masked = masked[: match.start()] + " " * len(match.group(0)) + masked[match.end() :]
    for match in _NUMBER.finditer(masked):
        # a sign only where it joins no word or number before it ("x-1", "2-3" are not negative)
        negative = (match.group("sign") or "+") in "-−–"
        number = float(match.group("body").replace(",", ""))
        unit = _UNITS.get((match.group("unit") or "").lower())
        found.append(Value(-number if negative else number, unit))
    for match in _SPELLED.finditer(masked) if spelled else ():  # "thirty days" is 30 days
        number = NUMBER_WORDS[match.group("tens").lower()] + NUMBER_WORDS.get((match.group("units") or "").lower(), 0)
        found.append(Value(float(number), _UNITS.get((match.group("unit") or "").lower())))
    return found


def has_measure(text: str) -> bool:
    """A number with a unit of measure: ``512 MB``, ``30 seconds``, ``10%``."""
    return any(value.unit is not None for value in values(text))


def has_date(text: str) -> bool:
    return _DATE.search(text) is not None


def unsupported_values(claim: str, sources: str) -> list[Value]:
    """The values ``claim`` writes in digits that ``sources`` do not hold (in digits or words) with the same
    sign, magnitude and unit."""
    known = values(sources, spelled=True)
    return [value for value in values(claim) if not any(value.matches(other) for other in known)]

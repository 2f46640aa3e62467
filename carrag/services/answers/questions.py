"""What a question asks for, read from its wording: the answer unit's model crosses these with what a
unit holds (a number, a date, a name, a command)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_QUANTITY = re.compile(
    r"\bhow (many|much|long|old|far|often|big|large|small|high|wide|deep|tall|heavy|fast)\b"
    r"|\b(what|which)\s+(is\s+the\s+|are\s+the\s+|was\s+the\s+)?(\w+\s+)?"
    r"(number|percentage|amount|size|length|limit|maximum|minimum|max|min|default|value|range|port|version|"
    r"count|rate|score|price|cost|width|height|depth|duration|timeout|level|precision|accuracy|total)\b",
    re.I,
)
_DATE = re.compile(r"\bwhen\b|\b(what|which)\s+(year|date|day|month|time|release)\b|\bin what year\b", re.I)
_PERSON = re.compile(r"^\s*(who|whom|whose)\b|\bwhich\s+(person|author|company|organi[sz]ation)\b", re.I)
_PLACE = re.compile(r"^\s*where\b|\bwhich\s+(file|directory|folder|path|location)\b", re.I)
_COMMAND = re.compile(
    r"\b(which|what)\s+(\w+\s+)?(command|option|flag|switch|function|method|macro|directive|parameter|keyword|"
    r"setting|variable|syntax|argument|key|shortcut|call|class|module|package|environment)\b"
    r"|\bhow\s+(do|can|should|would)\s+(i|you|we|one)\b|\bhow to\b",
    re.I,
)
_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|should|will|would|has|have|had|must|may|might|shall)\b", re.I
)
_DEFINITION = re.compile(
    r"^\s*what\s+(is|are)\s+(an?\s+|the\s+)?[\w'’ -]+\??$|\b(stand for|mean|meaning|defined)\b", re.I
)
_LIST = re.compile(
    r"\b(list|name|which|what)\b.*\b(are|does|do)\b.*\b\w+s\b|\bwhat (kinds|types|options)\b|\blist\b", re.I
)
_REASON = re.compile(r"^\s*why\b|\bwhat (is|was) the (reason|purpose)\b", re.I)

ASKS = ("quantity", "date", "person", "place", "command", "yes_no", "definition", "list", "reason")


@dataclass(frozen=True, slots=True)
class Asked:
    """The kinds of answer a question asks for (several may hold: "which option sets the maximum size")."""

    quantity: bool
    date: bool
    person: bool
    place: bool
    command: bool
    yes_no: bool
    definition: bool
    list: bool
    reason: bool

    def flags(self) -> dict[str, float]:
        return {f"asks_{name}": float(getattr(self, name)) for name in ASKS}


def asked(question: str) -> Asked:
    text = question.strip()
    return Asked(
        quantity=_QUANTITY.search(text) is not None,
        date=_DATE.search(text) is not None,
        person=_PERSON.search(text) is not None,
        place=_PLACE.search(text) is not None,
        command=_COMMAND.search(text) is not None,
        yes_no=_YES_NO.search(text) is not None,
        definition=_DEFINITION.search(text) is not None,
        list=_LIST.search(text) is not None,
        reason=_REASON.search(text) is not None,
    )

"""What kind of answer a question asks for: a quantity (a number the question does not already hold)
or a person (a name). Read from the question's wording only."""

from __future__ import annotations

import re

_QUANTITY = re.compile(
    r"\b(how (many|much|long|old|far|often|tall|big|large|heavy|high|wide)|"
    r"(what|which) (year|percentage|number|amount|date|size)|when|in what year)\b",
    re.I,
)
# "What TED score ...", "What was Nespresso's trading operating profit ...": the noun asked about (within
# the first few words) is a measure.
_MEASURE = re.compile(
    r"^\s*(?:(?:in|from|at|on|by|to|for|of)\s+)?(what|which)\s+(?:(?:is|was|are|were|does|did|do)\s+)?(?:(?:the|a|an|its|their|his|her)\s+)?"
    r"(?:[\w'’-]+\s+){0,3}?(scores?|rates?|percentages?|share|numbers?|amounts?|prices?|costs?|values?|"
    r"sizes?|lengths?|weights?|temperatures?|versions?|accuracy|revenues?|sales|profits?|income|population|"
    r"age|density|speed|capacity|totals?|counts?|strength|hardness|elongation|width|height|depth|duration|"
    r"fees?|salary|growth|thresholds?|limits?|cut-?offs?)\b"
    # what follows the measure: a preposition, an auxiliary, the end, or a verb before its object ("gives an")
    r"(?=\s*(?:(?:of|does|did|do|is|was|are|were|in|for|across|at|on|per|from)\b|\(|\?|,|$"
    r"|[a-z]+s\s+(?:an?|the|its|their)\b))",
    re.I,
)
_PERSON = re.compile(r"^\s*(who|whom|whose)\b", re.I)


def expects_number(question: str) -> bool:
    return bool(_QUANTITY.search(question) or _MEASURE.search(question))


def expects_person(question: str) -> bool:
    return bool(_PERSON.search(question))

"""What a question asks *about*: the noun it wants a value of ("email", "chief executive officer",
"churn rate"), read from its wording alone.

"What is Jim Bainbridge's email?" asks for an email: a passage that names Jim Bainbridge and gives
someone else's email shares most of the question's words and still does not answer it. The asked
noun is the head of the noun phrase after the question word (``what is the ... of``, ``which ...
does``, ``who is the ... of``, ``how many ... did``): its last word, and a common noun that owns it
("his mother's name" asks about the mother). Capitalised words are names (the subject, checked as
key terms elsewhere); words too generic to check ("name", "number", "value") are left out.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'’\-]*|\(|\)|[0-9][\w.,\-]*")
_LEADING_PREPOSITION = frozenset(
    [
        "in",
        "on",
        "at",
        "from",
        "for",
        "to",
        "by",
        "of",
        "with",
        "during",
        "since",
        "across",
        "among",
        "between",
        "within",
        "into",
        "over",
        "under",
        "about",
        "via",
        "per",
        "and",
        "but",
        "so",
    ]
)
_QUESTION_WORD = frozenset(["what", "which", "who", "whose"])
_BE = frozenset(["is", "are", "was", "were"])
_BE_OR_AUX = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "does",
        "did",
        "do",
        "has",
        "have",
        "had",
        "can",
        "could",
        "should",
        "will",
        "would",
        "must",
        "may",
        "might",
    ]
)
_DETERMINERS = frozenset(["the", "a", "an", "his", "her", "its", "their", "our", "your", "my", "this", "that"])
# where the noun phrase ends: a preposition, a verb or auxiliary, a comma, the question mark
_PRONOUNS = frozenset(["it", "he", "she", "they", "we", "you", "i", "him", "them", "there"])
_PHRASE_END = (
    _LEADING_PREPOSITION
    | _BE_OR_AUX
    | _PRONOUNS
    | frozenset(
        ["and", "or", "as", "than", "that", "which", "per", "before", "after", "when", "while", "if", "because"]
    )
)
# too generic to check (a name, a number), or answered by the number itself (a year, a date)
_GENERIC = frozenset(
    [
        "name",
        "names",
        "number",
        "numbers",
        "value",
        "values",
        "amount",
        "kind",
        "type",
        "types",
        "one",
        "ones",
        "thing",
        "things",
        "part",
        "parts",
        "item",
        "items",
        "figure",
        "figures",
        "term",
        "terms",
        "way",
        "ways",
        "year",
        "years",
        "date",
        "dates",
        "month",
        "time",
        "percentage",
        "percent",
    ]
)
MAX_PHRASE_WORDS = 5


def asked_nouns(question: str) -> list[str]:
    """The words naming what the question asks about, one of which an answer must mention (lower case,
    as written): the head of the noun phrase after "what/which/who is (the)" and the word before it
    ("location code" is answered by a "Location" column), or the common noun owning a generic head ("his
    mother's name": the mother). Empty when the question does not ask for an attribute in that form:
    "what does X stand for", "which act removed ..." or "what material is it made of" (the answer
    names an instance, not the category), yes/no questions. "How many <noun>" asks for a count of the
    noun: the answer says what it counts ("600 million records", not "by 15%")."""
    tokens = _TOKEN.findall(question)
    while tokens and tokens[0].lower() in _LEADING_PREPOSITION:
        tokens = tokens[1:]
    if len(tokens) < 3:
        return []
    counted = tokens[0].lower() == "how" and tokens[1].lower() in ("many", "much")
    if not counted and (tokens[0].lower() not in _QUESTION_WORD or tokens[1].lower() not in _BE):
        return []
    rest = tokens[2:]
    while rest and rest[0].lower() in _DETERMINERS:
        rest = rest[1:]
    phrase = _noun_phrase(rest)
    if not phrase:
        return []
    if _is_owner(phrase[-1]):
        return []
    if phrase[-1].lower() in _GENERIC:
        # "his mother's name" asks about the mother, "her phone number" about a phone
        return _checkable([phrase[-2]]) if len(phrase) > 1 else []
    if not _checkable([phrase[-1]]):
        return []
    before = phrase[-2] if len(phrase) > 1 and not _is_owner(phrase[-2]) else ""
    # the word before may be a name ("the Brinell hardness" is answered by a "Brinell HB" column)
    return _checkable([phrase[-1]]) + ([before.lower()] if before and not any(c.isdigit() for c in before) else [])


def _is_owner(word: str) -> bool:
    return word.lower().endswith(("'s", "’s", "'", "’"))


def _checkable(words: list[str]) -> list[str]:
    """Without names (the subject, checked elsewhere), generic words and codes."""
    kept = []
    for word in words:
        bare = re.sub(r"['’]s?$", "", word)
        if bare and not bare[:1].isupper() and bare.lower() not in _GENERIC and not any(c.isdigit() for c in bare):
            kept.append(bare.lower())
    return kept


def _is_verb(token: str, following: str | None) -> bool:
    """A word of the phrase that is the question's verb ("which extra *installs* the binding", "which
    act *removed* the judge"): ends like a verb and is followed by what follows a verb."""
    lowered, after = token.lower(), (following or "").lower()
    if lowered.endswith("ed") and (after in _DETERMINERS or after in _PHRASE_END):
        return True
    return lowered.endswith("s") and not lowered.endswith("ss") and (after in _DETERMINERS or after == "and")


def _noun_phrase(tokens: list[str]) -> list[str]:
    """The leading words up to where the phrase ends; a bracketed aside ("carbon (C) content") is skipped.
    Empty when it runs on too long to be a noun phrase or when it begins with the verb."""
    phrase: list[str] = []
    depth = 0
    for index, token in enumerate(tokens):
        if token == "(":
            depth += 1
            continue
        if token == ")":
            depth = max(depth - 1, 0)
            continue
        if depth:
            continue
        if token.lower() in _PHRASE_END or token.lower() in _DETERMINERS:
            break
        if _is_verb(token, tokens[index + 1] if index + 1 < len(tokens) else None):
            break
        phrase.append(token)
    return phrase if len(phrase) <= MAX_PHRASE_WORDS else []

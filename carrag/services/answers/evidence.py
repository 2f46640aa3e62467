"""Lexical evidence: the content terms, numbers and names of a text, and how rare each term is.

Terms are lower-cased words without stop words, crudely stemmed (``sizes`` → ``size``) so that a
question and a passage meet on the same word. Numbers are normalised (``7,500`` → ``7500``,
``3.50`` → ``3.5``). Rarity is an IDF over the candidate sentences of one request: a term found in
few of them (``FL-500S``) is stronger evidence than one found in most (``oil`` in an oil manual).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from carrag.services.stop_words import ENGLISH_STOP_WORDS

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*(?:[.,][0-9]+)*")
_NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:[.,]\d+)*(?:\.\d+)?")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")

# Beyond the English function words: the words of instructions and questions about documents.
STOP_WORDS = ENGLISH_STOP_WORDS | frozenset(
    [
        "according",
        "also",
        "answer",
        "based",
        "context",
        "document",
        "documents",
        "get",
        "gets",
        "give",
        "given",
        "let",
        "mention",
        "mentioned",
        "one",
        "ones",
        "passage",
        "please",
        "provided",
        "question",
        "said",
        "say",
        "says",
        "source",
        "sources",
        "tell",
        "text",
        "use",
        "used",
        "using",
    ]
)


def stem(word: str) -> str:
    if not word.isalpha():
        return word  # codes and part numbers (FL-500S) stay as they are
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("s", ""), ("ing", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            return word[: len(word) - len(suffix)] + keep
    return word


def normalise_number(raw: str) -> str:
    text = raw.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw) else raw.replace(",", ".")
    if "." in text:
        text = text.rstrip("0").rstrip(".") or "0"
    return text.lstrip("0") or "0"


def _tokens(text: str) -> list[str]:
    """Words as written; a comma only stays inside a number (``7,500``), so a csv row's cells
    (``Zone NA,12553``) come apart."""
    tokens: list[str] = []
    for match in _WORD.finditer(text):
        token = match.group(0)
        if "," in token and not re.fullmatch(r"[\d.,]+", token):
            tokens.extend(part for part in token.split(",") if part)
        else:
            tokens.append(token)
    return tokens


def terms(text: str) -> list[str]:
    """Content terms, stemmed, in order (repeats kept)."""
    found: list[str] = []
    for token in _tokens(text):
        word = re.sub(r"['’]s$", "", token.lower()).strip("'’-")
        if not word or word in STOP_WORDS:
            continue
        if re.fullmatch(r"[\d.,]+", word) and any(char.isdigit() for char in word):
            found.append(normalise_number(word))
        elif len(word) > 1:
            found.append(stem(word))
    return found


_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_UNITS += "seventeen eighteen nineteen"
NUMBER_WORDS = {word: value for value, word in enumerate(_UNITS.split())}
NUMBER_WORDS.update(
    {
        w: 10 * (i + 2)
        for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"])
    }
)
NUMBER_WORDS.update({"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000})
_NUMBER_WORD = re.compile(
    r"\b(" + "|".join(NUMBER_WORDS) + r")(?:[- ](" + "|".join(list(NUMBER_WORDS)[1:10]) + r"))?\b", re.I
)


def numbers(text: str, *, spelled: bool = False) -> set[str]:
    """The numbers written as digits in a text, normalised; with ``spelled`` also the spelled-out
    ones (``thirty`` → ``30``, ``twenty-one`` → ``21``), so an answer may write a source's words
    as digits."""
    found: set[str] = set()
    for match in _NUMBER.finditer(text):
        raw = match.group(0).rstrip(".,")
        found.add(normalise_number(raw))
    for match in _NUMBER_WORD.finditer(text) if spelled else ():
        value = NUMBER_WORDS[match.group(1).lower()] + (NUMBER_WORDS[match.group(2).lower()] if match.group(2) else 0)
        found.add(str(value))
    return found


def names(text: str) -> set[str]:
    """Capitalised words that are not the first word of a sentence (proper names, roughly), lower-cased."""
    return {match.group(0).lower() for match in _NAME.finditer(text) if match.group(0).lower() not in STOP_WORDS}


def idf(documents: Iterable[Sequence[str]]) -> dict[str, float]:
    """Rarity of each term over ``documents`` (each a term list): ln(1 + N / df)."""
    document_frequency: Counter[str] = Counter()
    count = 0
    for document in documents:
        count += 1
        document_frequency.update(set(document))
    return {term: math.log(1 + count / df) for term, df in document_frequency.items()}


def weighted_coverage(query_terms: Sequence[str], text_terms: set[str], weights: dict[str, float]) -> float:
    """The share of the query's term weight that the text contains (0..1). Unknown terms weigh the
    most (they are rarer than anything seen)."""
    unique = set(query_terms)
    if not unique:
        return 0.0
    default = max(weights.values(), default=1.0)
    total = sum(weights.get(term, default) for term in unique)
    found = sum(weights.get(term, default) for term in unique if term in text_terms)
    return found / total if total else 0.0


_QUESTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
    ]
)


def key_terms(question: str) -> set[str]:
    """What a question names that its answer must mention: numbers and codes (``2015``, ``F-150``,
    ``top-5``) and capitalised words after the first (``Bruins``, ``IBM``), as ``terms`` writes them."""
    found: set[str] = set()
    for position, token in enumerate(_tokens(question)):
        raw = re.sub(r"['’]s$", "", token).strip("'’-")
        if not raw or raw.lower() in STOP_WORDS or raw.lower() in _QUESTION_WORDS:
            continue
        if any(ch.isdigit() for ch in raw):
            found.update(terms(raw))
        elif position > 0 and raw[0].isupper():
            found.update(terms(raw.replace("-", " ")))  # January-June: either month may be written apart
    return found


_FOOTNOTE_MARK = re.compile(r"\b([A-Za-z]{3,})\d{1,2}\b")  # "Resource Center1 reports"


def missing_key_terms(question: str, passages: Sequence[str]) -> list[str]:
    """The key terms of ``question`` that none of ``passages`` mentions. A word written with a footnote
    mark ("Center1") or inside a hyphenated word ("White-headed") counts as mentioned; a code also
    when written apart or without hyphens (top-5, top 5, top5); a bare number only as a whole token
    ("FY 23" is not mentioned by "2023")."""
    text = "\n".join(passages)
    lowered = text.lower()
    mentioned = set(terms(text)) | numbers(text, spelled=True) | set(lowered.split())
    mentioned |= {part for term in list(mentioned) if "-" in term for part in terms(term.replace("-", " "))}
    mentioned |= set(terms(" ".join(_FOOTNOTE_MARK.findall(text))))
    squashed = "".join(lowered.split()).replace("-", "")

    def found(term: str) -> bool:
        if term in mentioned:
            return True  # codes also match written apart or without hyphens: top-5, top 5, top5
        # a bare number only as a whole token: "FY 23" is not in "2023"
        code = any(ch.isdigit() for ch in term) and not term.replace(".", "").isdigit()
        return code and term.replace("-", "") in squashed

    return sorted(term for term in key_terms(question) if not found(term))

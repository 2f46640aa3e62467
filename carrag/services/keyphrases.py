"""Key phrases of a document for its tags: YAKE (statistical, no model) in the document's language
(py3langid; YAKE's stop words for it, else English), then `acceptable_tag`, the filter every tag passes.
Mostly-*lorem ipsum* paragraphs are dropped first, so a template's filler does not become its topic.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from carrag.services.stop_words import word_list

MAX_TAG_LENGTH = 40
SAMPLE_CHARS = 20_000  # of the document, for extraction; language detection reads the first 5,000
# py3langid codes whose YAKE stop-word file has another name.
_YAKE_LIST_NAMES = {"cs": "cz"}
_TOKEN = re.compile(r"[^\W\d_][\w'’\-]*|\d+", re.UNICODE)
_MARKUP = re.compile(r"[|#*_`<>\[\]{}()=\\/@]|://|\.\w{2,4}$")
_LINE_BREAK = re.compile(r"(?<![.!?:;,])[ \t]*\n")
_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=[#\-*|])")
FILLER_WORDS = word_list("filler")
CHROME_WORDS = word_list("site_chrome")  # a phrase holding any of them is not a topic
LOREM_WORDS = word_list("lorem_ipsum")


def _stopword_dir() -> Path:
    import yake

    return Path(yake.__file__).parent / "core" / "StopwordsList"


@functools.cache
def stopwords(language: str) -> frozenset[str]:
    """YAKE's stop words for a language code (empty when YAKE has no list for it)."""
    name = _YAKE_LIST_NAMES.get(language, language)
    path = _stopword_dir() / f"stopwords_{name}.txt"
    return read_word_list(path) if path.is_file() else frozenset()


def read_word_list(path: Path) -> frozenset[str]:
    """One word a line; UTF-8, or ISO-8859-1 for the few lists YAKE ships in it (as YAKE reads them)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return frozenset(word.strip().lower() for word in text.splitlines() if word.strip())


def detect_language(text: str) -> str:
    """An ISO 639-1 code, "en" when the text is too short to tell."""
    sample = text[:5000]
    if len(_TOKEN.findall(sample)) < 5:
        return "en"
    import py3langid

    language, _score = py3langid.classify(sample)
    return language


def stopwords_for(language: str) -> frozenset[str]:
    """The document's language's stop words plus English ones (documents mix in English terms)."""
    return stopwords(language) | stopwords("en")


def without_placeholder_text(text: str) -> str:
    """The text without paragraphs that are mostly lorem-ipsum vocabulary."""
    kept: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        words = [word.lower() for word in _TOKEN.findall(paragraph) if not word.isdigit()]
        if len(words) >= 4 and sum(word in LOREM_WORDS for word in words) / len(words) >= 0.5:
            continue
        kept.append(paragraph)
    return "\n\n".join(kept)


def acceptable_tag(tag: str, stop: Iterable[str]) -> bool:
    """Whether ``tag`` says something about a document (see the module docstring)."""
    tag = tag.strip().lower()
    if not tag or len(tag) > MAX_TAG_LENGTH or not any(ch.isalpha() for ch in tag) or _MARKUP.search(tag):
        return False
    words = [word.strip("'’-") for word in tag.split()]
    stop = stop if isinstance(stop, (set, frozenset)) else frozenset(stop)
    if words[0] in stop or words[-1] in stop:
        return False
    if any(word in CHROME_WORDS for word in words) or words[0] in FILLER_WORDS or words[-1] in FILLER_WORDS:
        return False
    content = [word for word in words if word not in stop and word not in FILLER_WORDS and word not in LOREM_WORDS]
    if not content:
        return False
    return all(len(word) >= 3 or word.isdigit() or any(ch.isdigit() for ch in word) for word in content)


def keyphrases(text: str, limit: int, *, language: str | None = None, exclude: Iterable[str] = ()) -> list[str]:
    """Up to ``limit`` lower-case key phrases of ``text``, best first."""
    import yake

    text = without_placeholder_text(text[:SAMPLE_CHARS])
    if len(_TOKEN.findall(text)) < 3:
        return []
    language = language or detect_language(text)
    stop = stopwords_for(language)
    extractor = yake.KeywordExtractor(lan="en", n=3, dedup_lim=0.8, top=max(limit * 6, 20), stopwords=set(stop))
    # A line break ends a phrase: PDF title blocks, author lists and table rows are lines, and
    # three-word windows across them ("wyn roberts date") are not terms.
    candidates = extractor.extract_keywords(_LINE_BREAK.sub(" .\n", text))
    ranked = sorted(candidates, key=lambda pair: _adjusted(pair[0], pair[1]))
    chosen: list[str] = []
    excluded = [phrase.lower() for phrase in exclude]
    for phrase, _score in ranked:
        if _name_runs_into_words(phrase, stop):
            continue
        tag = re.sub(r"\s+", " ", phrase).strip().lower()
        if not acceptable_tag(tag, stop):
            continue
        if any(_overlaps(tag, other) for other in [*excluded, *chosen]):
            continue
        chosen.append(tag)
        if len(chosen) >= limit:
            break
    return chosen


def _name_runs_into_words(phrase: str, stop: frozenset[str]) -> bool:
    """A name run together with ordinary words ("Pavlovna Scherer received", "Scherer received
    Prince", "reception in Petersburg"): capitalised and lower-case content words mixed, unless the
    one capital is the first word (a sentence start: "Tire pressure monitoring")."""
    words = [word for word in phrase.split() if word.lower() not in stop]
    capitals = [index for index, word in enumerate(words) if word[:1].isupper()]
    if not capitals or len(capitals) == len(words):
        return False
    return capitals != [0]


def _overlaps(tag: str, other: str) -> bool:
    """Whether two phrases say the same thing: all but one word of the shorter in the longer (so
    "bedoya rob bestgen" after "hernando bedoya rob", "standing trustee" after "united states
    trustee"), or one inside the other."""
    words, other_words = [_stem(word) for word in tag.split()], [_stem(word) for word in other.split()]
    shared = len(set(words) & set(other_words))
    return shared >= max(1, min(len(words), len(other_words)) - 1)


def _stem(word: str) -> str:
    """Enough stemming to see "owners manual" and "owner manual" as one: a plural or possessive s."""
    word = word.removesuffix("'s").removesuffix("’s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _adjusted(phrase: str, score: float) -> float:
    """YAKE's score (lower is better) with a bonus for multi-word terms and two-word capitalised
    names."""
    words = phrase.split()
    bonus = 1.5 if len(words) > 1 else 1.0
    if len(words) == 2 and all(word[:1].isupper() for word in words):
        bonus *= 1.5
    return score / bonus

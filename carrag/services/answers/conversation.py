"""The retrieval query of a question asked in a conversation.

A follow-up is recognised by what it needs from the history: a reference it does not resolve itself
(a pronoun or demonstrative with no noun before it in the question: "What sizes does *it* come in?",
"Is *that option* on by default?") or an ellipsis that only continues the previous question ("And
for PostgreSQL?", "What about the second one?"). Only then is the previous user turn put in front of
it for retrieval (a fragment of one or two words — "Price?" — too); a question that stands on its own ("What is the numeric precision of PostgreSQL?"
after questions about SQLite) is searched on its own. The LLM always gets the history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.answers.evidence import STOP_WORDS
from carrag.services.models import ChatMessage

_REFERENCE = frozenset(
    [
        "it",
        "its",
        "it's",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "this",
        "that",
        "these",
        "those",
        "former",
        "latter",
        "same",
        "one",
    ]
)
_DEMONSTRATIVE = frozenset(["this", "that", "these", "those"])
_ELLIPSIS = re.compile(r"^\s*(and|or|but|also|what about|how about|and what about|same for|what of)\b", re.I)
_QUESTION_WORDS = frozenset(["what", "which", "who", "whom", "whose", "when", "where", "why", "how"])
_AUXILIARY = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "shall",
        "has",
        "have",
        "had",
        "may",
        "might",
        "must",
    ]
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\w.]*")


def _is_content(word: str) -> bool:
    lowered = word.lower()
    return lowered not in STOP_WORDS and lowered not in _QUESTION_WORDS and lowered not in _REFERENCE


def needs_history(question: str) -> bool:
    """Whether ``question`` leans on the turns before it (see the module)."""
    if _ELLIPSIS.match(question):
        return True
    words = _WORD.findall(question)
    if not any(_is_content(word) for word in words):
        return True  # "Why?", "How does it work?"
    if len(words) <= 2 and not any(word.lower() in _QUESTION_WORDS | _AUXILIARY for word in words):
        return True  # "Price?", "Default port?": a fragment continuing the previous question
    asked_phrase = _asked_phrase(words)
    for index, word in enumerate(words):
        lowered = word.lower().replace("’", "'")
        if lowered not in _REFERENCE or lowered in ("one", "same"):
            continue
        if lowered == "that" and index > 0 and _is_content(words[index - 1]):
            continue  # "the option that sets ...": a relative pronoun
        before = words[:index]
        if lowered in _DEMONSTRATIVE and index + 1 < len(words) and _is_content(words[index + 1]):
            # "this option": resolved when the question named the option before
            if words[index + 1].lower() not in {w.lower() for w in before}:
                return True
            continue
        if not any(_is_content(w) for w in before[asked_phrase:]):
            return True
    return False


def _asked_phrase(words: Sequence[str]) -> int:
    """How many leading words ask the question ("what sizes", "which pretrained model" before "does it"):
    they name what is asked, not what a pronoun after them refers to."""
    if not words or words[0].lower() not in _QUESTION_WORDS:
        return 0
    return next((i for i, word in enumerate(words) if word.lower() in _AUXILIARY), 1)


def retrieval_query(question: str, history: Sequence[ChatMessage]) -> str:
    previous = next((m.content.strip() for m in reversed(history) if m.role == "user" and m.content.strip()), None)
    if previous is None or not needs_history(question):
        return question
    return f"{previous}\n{question}"

"""Turn a free-text question into an FTS5 MATCH expression for the SQLite BM25 leg.

Every word becomes a quoted term (so user text can never be FTS5 syntax) and the terms are OR-ed:
BM25 then ranks by how many informative words a chunk shares with the question. Common English
function words are dropped first; they carry no signal and make OR queries slow on big indexes.
"""

from __future__ import annotations

import re

from carrag.services.stop_words import ENGLISH_STOP_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)

MAX_TERMS = 64


def query_terms(question: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(question)]
    informative = [w for w in words if w not in ENGLISH_STOP_WORDS]
    return list(dict.fromkeys(informative or words))[:MAX_TERMS]  # each word once, in order


def fts_match_expression(question: str) -> str | None:
    terms = query_terms(question)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)

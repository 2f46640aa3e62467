"""The retrieval query of a follow-up question.

"What sizes does it come in?" means nothing to the search without the turn before it. When the
question leans on the conversation (a pronoun or demonstrative that points back, or fewer than
``MIN_OWN_TERMS`` content terms of its own), the previous user turn is put in front of it for
retrieval and relevance; the LLM still gets the question as asked, with the history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.answers.evidence import terms
from carrag.services.models import ChatMessage

MIN_OWN_TERMS = 3
_BACK_REFERENCE = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|this|that|these|those|he|she|him|her|his|hers|former|latter)\b",
    re.I,
)


def leans_on_conversation(question: str) -> bool:
    return bool(_BACK_REFERENCE.search(question)) or len(terms(question)) < MIN_OWN_TERMS


def retrieval_query(question: str, history: Sequence[ChatMessage]) -> str:
    previous = next((m.content.strip() for m in reversed(history) if m.role == "user" and m.content.strip()), None)
    if previous is None or not leans_on_conversation(question):
        return question
    return f"{previous}\n{question}"

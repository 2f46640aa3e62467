"""The prompt's own scaffolding, echoed by a small model, removed from a generated answer before it is checked.

The user message the model gets (`carrag.services.prompt.build_messages`) is laid out as
``Context:`` / ``[Source n: file]`` blocks separated by ``---`` / ``Question: <question>`` /
``Answer based on the context above:``. A small model (SmolLM2-135M) often copies that layout into
its answer: a ``Question: …?`` line repeating the question, an ``Answer based on context above:``
label before the text, a ``---`` separator. None of it is a claim about the documents, and a
repeated question would even look "supported" (the words are the question's). So:

- a ``Question:`` label and the question after it (up to its ``?``, or the end of the line) go;
- the labels ``Answer:``, ``Answer based on (the) context (above):``, ``Context:`` and ``Response:``
  at the start of a line or a sentence go, the text after them stays;
- separator lines (``---``) go.
"""

from __future__ import annotations

import re

_START = r"(^|(?<=[.!?])[ \t]+)"  # a line's or a sentence's start (group 1: the space kept)
_QUESTION_ECHO = re.compile(_START + r"[ \t]*question[ \t]*:[^\n?]*(?:\?(?:[ \t]*\[[^\]\n]*\])*|$)", re.I | re.M)
_LABEL = re.compile(
    _START + r"[ \t]*(?:answer(?:[ \t]+based[ \t]+on(?:[ \t]+the)?[ \t]+context(?:[ \t]+above)?)?|context|response)"
    r"[ \t]*:[ \t]*",
    re.I | re.M,
)
_SEPARATOR = re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)


def strip_prompt_echo(answer: str) -> str:
    """``answer`` without the prompt layout it repeated; the rest of the text as written."""
    text = _QUESTION_ECHO.sub(r"\1", answer)
    text = _LABEL.sub(r"\1", text)
    text = _SEPARATOR.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", re.sub(r"[ \t]{2,}", " ", text))
    return re.sub(r"\n{3,}", "\n\n", text).strip()

"""Unsupported sentences made visible in the answer text itself, for readers that never see ``grounding``.

The grounding check (`grounding`) reports which sentences of a generated answer no source supports;
the web UI marks them from that report. Two readers only get text:

- the terminal (`carrag query`): `mark_unsupported` puts ``MARK`` after each unsupported sentence;
- OpenAI clients (`/v1/chat/completions`): `unsupported_note` is appended to the answer, listing the
  unsupported sentences (a stream cannot take back text it sent, so a note at the end is the one
  form that works for streamed and whole answers alike).

Both read the ``grounding`` dict as the API sends it (`Grounding.as_dict`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MARK = "[not supported by the sources]"
NOTE_HEADING = "Not supported by the sources (no retrieved passage says this; do not rely on it):"

_CITATION = re.compile(r"\s*\[Source \d+\]")


def _unsupported(grounding: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not grounding:
        return []
    return [sentence for sentence in grounding.get("sentences") or [] if sentence.get("supported") is False]


def unsupported_texts(grounding: Mapping[str, Any] | None) -> list[str]:
    """The unsupported sentences, without their citations."""
    texts = [" ".join(_CITATION.sub("", str(sentence.get("text", ""))).split()) for sentence in _unsupported(grounding)]
    return [text for text in texts if text]


def mark_unsupported(answer: str, grounding: Mapping[str, Any] | None, mark: str = MARK) -> str:
    """``answer`` with ``mark`` after each unsupported sentence (found by its offsets, else its text)."""
    insertions: list[int] = []
    cursor = 0
    for sentence in _unsupported(grounding):
        start, end, text = sentence.get("start"), sentence.get("end"), str(sentence.get("text", ""))
        if not (isinstance(start, int) and isinstance(end, int) and cursor <= start < end <= len(answer)) or (
            text and answer[start:end] != text
        ):
            found = answer.find(text, cursor) if text else -1
            if found < 0:
                continue
            end = found + len(text)
        insertions.append(end)
        cursor = end
    marked = answer
    for end in reversed(insertions):
        body = marked[:end].rstrip()
        marked = f"{body} {mark}{marked[len(body) :]}"
    return marked


def unsupported_note(grounding: Mapping[str, Any] | None) -> str:
    """The note appended to an answer whose sentences are not all supported ("" when they are)."""
    texts = unsupported_texts(grounding)
    if not texts:
        return ""
    return "\n\n" + NOTE_HEADING + "".join(f"\n- {text}" for text in texts)

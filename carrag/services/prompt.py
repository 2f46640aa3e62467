"""What goes into the prompt (seed 001 stage 4).

    system:    SYSTEM_PROMPT (answer only from the context, cite [Source n])
    history:   earlier turns, oldest first (at most MAX_HISTORY_MESSAGES)
    user:      Context:
               [Source 1: file.pdf]
               <expanded passage>

               ---

               [Source 2: ...]
               ...

               Question: <question>

               Answer based on the context above:

The context is capped at MAX_CONTEXT_CHARS; passages are kept whole, best first, and the last one
that does not fit is cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from carrag.services.models import ChatMessage

SOURCE_SEPARATOR = "\n\n---\n\n"
ELLIPSIS = " …"
MIN_PARTIAL_SOURCE = 50  # a cut source shorter than this is left out rather than sent as a stub


@dataclass(slots=True)
class PromptSource:
    filename: str
    text: str


def format_context(sources: Sequence[PromptSource], max_chars: int) -> str:
    blocks: list[str] = []
    used = 0
    for number, source in enumerate(sources, start=1):
        separator = len(SOURCE_SEPARATOR) if blocks else 0
        room = max_chars - used - separator
        header = f"[Source {number}: {source.filename}]\n"
        if room < len(header) + MIN_PARTIAL_SOURCE:
            break
        block = header + source.text
        if len(block) > room:
            block = block[: room - len(ELLIPSIS)].rstrip() + ELLIPSIS
        blocks.append(block)
        used += separator + len(block)
    return SOURCE_SEPARATOR.join(blocks)


def build_messages(
    question: str,
    sources: Sequence[PromptSource],
    *,
    system_prompt: str,
    history: Sequence[ChatMessage] = (),
    max_context_chars: int = 12_000,
    max_history_messages: int = 20,
) -> list[ChatMessage]:
    kept_history = [m for m in history if m.role in ("user", "assistant")]
    if max_history_messages >= 0:
        kept_history = kept_history[len(kept_history) - max_history_messages :] if max_history_messages else []
    context = format_context(sources, max_context_chars)
    user = f"Context:\n{context}\n\nQuestion: {question}\n\nAnswer based on the context above:"
    return [ChatMessage("system", system_prompt), *kept_history, ChatMessage("user", user)]

"""Stop a generation that repeats itself.

A small model often falls into a loop: the same sentence or paragraph again and again until the
token limit. ``LoopDetector`` watches the streamed text and reports a loop when its tail repeats
(the last ``window`` characters occurred ``repeats`` times in a row, for windows from
``MIN_PERIOD`` to ``MAX_PERIOD`` characters) or when one sentence of at least ``MIN_SENTENCE``
characters has been written ``repeats`` times. ``trimmed`` is the text with the repetitions cut,
keeping the first occurrence.
"""

from __future__ import annotations

import re
from collections import Counter

MIN_PERIOD = 12
MAX_PERIOD = 400
REPEATS = 3
MIN_SENTENCE = 20
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")


class LoopDetector:
    def __init__(self, repeats: int = REPEATS) -> None:
        self.repeats = repeats
        self.text = ""
        self.loop_start: int | None = None

    def feed(self, delta: str) -> bool:
        """Add a delta; True once a loop is detected."""
        self.text += delta
        if self.loop_start is None:
            self.loop_start = self._tail_loop() or self._sentence_loop()
        return self.loop_start is not None

    @property
    def trimmed(self) -> str:
        return self.text if self.loop_start is None else self.text[: self.loop_start].rstrip()

    def _tail_loop(self) -> int | None:
        text = self.text
        for period in range(MIN_PERIOD, min(MAX_PERIOD, len(text) // self.repeats) + 1):
            unit = text[len(text) - period :]
            if not unit.strip():
                continue
            if text.endswith(unit * self.repeats):
                return len(text) - period * (self.repeats - 1)
        return None

    def _sentence_loop(self) -> int | None:
        sentences = [(m.start(), " ".join(m.group(0).split())) for m in _SENTENCE.finditer(self.text)]
        counts = Counter(text for _, text in sentences if len(text) >= MIN_SENTENCE)
        looping = {text for text, count in counts.items() if count >= self.repeats}
        if not looping:
            return None
        seen: set[str] = set()
        for start, text in sentences:
            if text in looping:
                if text in seen:
                    return start  # cut at the first repetition
                seen.add(text)
        return None

"""Stage 4 of the query flow: search (stages 1–3), build the prompt, generate — whole or streamed.

`stream_answer` yields the events that `/query/stream` sends as Server-Sent Events: ``sources``
first, then ``token`` deltas, then ``done`` (or ``error`` if generation fails mid-stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from carrag.services.admission import AdmissionGate
from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.llms.base import LLM
from carrag.services.models import ChatMessage
from carrag.services.prompt import PromptSource, build_messages
from carrag.services.requests import AnswerQuery
from carrag.services.retrieval.search import SearchHit, SearchOutcome, SearchService
from carrag.services.settings import Settings
from carrag.services.telemetry import NullTelemetry, Telemetry


@dataclass(slots=True)
class AnswerSummary:
    """The ``done`` event: how the answer was made. ``model`` is None when nothing was generated."""

    model: str | None
    duration_ms: float
    timings_ms: dict[str, float]
    reranked: bool
    rerank_note: str | None
    empty_index: bool


@dataclass(slots=True)
class AnswerEvent:
    """``sources``: list[SearchHit]; ``token``: str (a text delta); ``done``: AnswerSummary;
    ``error``: str (why generation stopped after the stream began)."""

    kind: Literal["sources", "token", "done", "error"]
    data: Any


@dataclass(slots=True)
class Answer:
    answer: str
    sources: list[SearchHit]
    model: str
    duration_ms: float
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False
    rerank_note: str | None = None


# The stages an answer adds to its search's timings.
GENERATION_STAGES = ("generate", "first_token")


class AnswerService:
    def __init__(self, settings: Settings, search: SearchService, llm: LLM, telemetry: Telemetry | None = None) -> None:
        self.settings = settings
        self.telemetry = telemetry or NullTelemetry()
        self.search = search
        self.llm = llm
        # Admission before any work: a slow generator (the local LLM runs one answer at a time)
        # gets a short queue, and the rest a 429 at once rather than an error after LLM_TIMEOUT.
        self.generation = AdmissionGate(
            settings.resolved_max_concurrent_generations,
            settings.generation_queue_size,
            "answer generation",
            timeout=settings.query_queue_timeout,
        )

    def _messages(self, request: AnswerQuery, outcome: SearchOutcome) -> list[ChatMessage]:
        return build_messages(
            request.question,
            [PromptSource(hit.chunk.filename, hit.text) for hit in outcome.hits],
            system_prompt=self.settings.system_prompt,
            history=request.history,
            max_context_chars=self.settings.resolved_max_context_chars,
            max_history_messages=self.settings.max_history_messages,
        )

    async def stream_answer(self, request: AnswerQuery) -> AsyncIterator[AnswerEvent]:
        """Errors before the first event raise (the route answers with an HTTP error; Overloaded
        when the generation queue is full); errors after it become an ``error`` event."""
        async with self.generation.admit(), contextlib.aclosing(self._stream_answer(request)) as events:
            async for event in events:
                yield event

    async def _stream_answer(self, request: AnswerQuery) -> AsyncIterator[AnswerEvent]:
        started = time.perf_counter()
        outcome = await self.search.search(request.search)
        yield AnswerEvent("sources", outcome.hits)
        timings = dict(outcome.timings_ms)
        if not outcome.hits:
            yield AnswerEvent("token", outcome.message or "")
            timings["generate"] = 0.0
            yield AnswerEvent("done", self._done(started, timings, outcome, generated=False))
            return
        generation_started = time.perf_counter()
        first_token_ms: float | None = None
        try:
            async with asyncio.timeout(self.settings.llm_timeout):
                async for delta in self.llm.stream(
                    self._messages(request, outcome),
                    max_tokens=self.settings.llm_max_tokens,
                    temperature=self.settings.llm_temperature,
                ):
                    if first_token_ms is None:
                        first_token_ms = _ms(generation_started)
                    yield AnswerEvent("token", delta)
        except TimeoutError:
            yield AnswerEvent("error", f"generation exceeded {self.settings.llm_timeout:.0f}s (LLM_TIMEOUT)")
            return
        except CarragError as exc:
            yield AnswerEvent("error", exc.message)
            return
        timings["generate"] = _ms(generation_started)
        if first_token_ms is not None:
            timings["first_token"] = first_token_ms
        yield AnswerEvent("done", self._done(started, timings, outcome, generated=True))

    def _done(
        self, started: float, timings: dict[str, float], outcome: SearchOutcome, *, generated: bool
    ) -> AnswerSummary:
        # The search stages in ``timings`` were reported by SearchService; these are the answer's own.
        self.telemetry.stages("query", {stage: timings[stage] for stage in GENERATION_STAGES if stage in timings})
        return AnswerSummary(
            model=self.llm.model if generated else None,
            duration_ms=_ms(started),
            timings_ms=timings,
            reranked=outcome.reranked,
            rerank_note=outcome.rerank_note,
            empty_index=outcome.empty_index,
        )

    async def answer(self, request: AnswerQuery) -> Answer:
        parts: list[str] = []
        sources: list[SearchHit] = []
        done: AnswerSummary | None = None
        async for event in self.stream_answer(request):
            if event.kind == "sources":
                sources = event.data
            elif event.kind == "token":
                parts.append(event.data)
            elif event.kind == "error":
                raise DependencyUnavailable("llm", event.data)
            else:
                done = event.data
        assert done is not None, "a stream that raised no error ends with its done event"
        return Answer(
            answer="".join(parts),
            sources=sources,
            model=done.model or self.llm.model,
            duration_ms=done.duration_ms,
            timings_ms=done.timings_ms,
            reranked=done.reranked,
            rerank_note=done.rerank_note,
        )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)

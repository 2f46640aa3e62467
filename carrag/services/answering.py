"""Stage 4 of the query flow: search (stages 1–3), then answer — extract, generate, or refuse.

`stream_answer` yields the events that `/query/stream` sends as Server-Sent Events: ``sources``
first, then ``token`` deltas, then ``done`` (or ``error`` if generation fails mid-stream). The
``done`` event carries the final ``answer`` (citations fixed, loops cut, or the extractive fallback
of ``auto``) and how it was made and checked.

What a token may carry: only ``generate`` (the caller asked for the model's raw text) streams the
model's deltas as they come, each flagged ``draft``; ``done.answer`` then replaces them, and its
``grounding`` marks the sentences no source supports. Every other mode sends checked text only:
``auto`` holds the generation back until the grounding check has run and sends the kept answer (or
the extractive fallback) as one token, so unverified model text never reaches the user as the answer.

The steps, each in its own module under ``carrag/services/answers/``:

1. ``conversation``: a follow-up question is retrieved together with the previous user turn;
2. ``scoring``: every sentence of the passages is scored against the question;
3. ``refusal``: when no sentence is relevant enough, "the documents don't say" (no LLM);
4. ``modes``: extract (``extractive``) or generate from the fitted context (``context``), with the
   ``loops`` detector watching the stream;
5. ``scaffolding`` strips the prompt layout a small model echoes ("Question: …"), then ``grounding``
   checks the generated answer; ``auto`` falls back to extract when it is not grounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from carrag.services.admission import AdmissionGate
from carrag.services.answers.context import FittedSource, fit_context
from carrag.services.answers.conversation import retrieval_query
from carrag.services.answers.extractive import extract_answer
from carrag.services.answers.grounding import Grounding, check_grounding
from carrag.services.answers.loops import LoopDetector
from carrag.services.answers.modes import AnswerMode, effective_mode
from carrag.services.answers.refusal import judge_relevance, no_answer_text
from carrag.services.answers.scaffolding import strip_prompt_echo
from carrag.services.answers.scoring import ScoredPassages, score_passages
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.llms.base import LLM
from carrag.services.models import ChatMessage
from carrag.services.prompt import PromptSource, build_messages
from carrag.services.requests import AnswerQuery
from carrag.services.retrieval.search import SearchHit, SearchOutcome, SearchService
from carrag.services.settings import Settings
from carrag.services.telemetry import NullTelemetry, Telemetry

CHARS_PER_TOKEN = 4  # prompt tokens are estimated; the adapters stream one token per delta


@dataclass(slots=True)
class AnswerSummary:
    """The ``done`` event: how the answer was made and checked. ``model`` is None when no LLM wrote
    the answer; ``answer`` is the final text (it replaces the streamed tokens); ``highlights`` has
    one list of {start, end} per source."""

    model: str | None
    duration_ms: float
    timings_ms: dict[str, float]
    reranked: bool
    rerank_note: str | None
    empty_index: bool
    answer: str = ""
    answer_mode: str = "generate"
    requested_mode: str = "generate"
    fallback_reason: str | None = None
    answerable: bool = True
    finish_reason: str = "stop"
    grounding: dict[str, Any] | None = None
    highlights: list[list[dict[str, int]]] = field(default_factory=list)
    usage: dict[str, int] | None = None
    relevance: float | None = None
    degraded: str | None = None  # the search was lexical only, and why (`SearchOutcome.degraded`)


@dataclass(slots=True)
class AnswerEvent:
    """``sources``: list[SearchHit]; ``token``: str (checked text) or {"text", "draft": True} (a raw
    model delta in ``generate`` mode, not checked yet); ``done``: AnswerSummary; ``error``: str (why
    generation stopped after the stream began)."""

    kind: Literal["sources", "token", "done", "error"]
    data: Any


@dataclass(slots=True)
class Answer:
    answer: str
    sources: list[SearchHit]
    model: str | None
    duration_ms: float
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False
    rerank_note: str | None = None
    answer_mode: str = "generate"
    requested_mode: str = "generate"
    fallback_reason: str | None = None
    answerable: bool = True
    finish_reason: str = "stop"
    grounding: dict[str, Any] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    relevance: float | None = None
    degraded: str | None = None  # the search was lexical only, and why (`SearchOutcome.degraded`)


@dataclass(slots=True)
class _Outcome:
    """What the answer step decided; becomes the ``done`` event."""

    answer: str
    answer_mode: str
    requested_mode: str
    model: str | None = None
    fallback_reason: str | None = None
    answerable: bool = True
    finish_reason: str = "stop"
    grounding: Grounding | None = None
    highlights: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=lambda: _usage(0, 0))
    relevance: float | None = None


# The stages an answer adds to its search's timings.
GENERATION_STAGES = ("select", "generate", "first_token", "check")


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

    @property
    def embedder(self) -> EmbeddingService:
        return self.search.embedder

    def requested_mode(self, request: AnswerQuery) -> AnswerMode:
        return request.answer_mode or self.settings.resolved_answer_mode

    async def stream_answer(self, request: AnswerQuery) -> AsyncGenerator[AnswerEvent, None]:
        """Errors before the first event raise (the route answers with an HTTP error; Overloaded
        when the generation queue is full); errors after it become an ``error`` event. Extractive
        requests never wait for the generation queue."""
        mode, _ = effective_mode(self.requested_mode(request), self.llm.provider)
        admission = self.generation.admit() if mode != "extract" else contextlib.nullcontext()
        async with admission, contextlib.aclosing(self._stream_answer(request)) as events:
            async for event in events:
                yield event

    async def _stream_answer(self, request: AnswerQuery) -> AsyncGenerator[AnswerEvent, None]:
        started = time.perf_counter()
        # A follow-up question is searched with what the conversation was about.
        query = retrieval_query(request.question, request.history)
        outcome = await self.search.search(replace(request.search, question=query))
        yield AnswerEvent("sources", outcome.hits)
        timings = dict(outcome.timings_ms)
        requested = self.requested_mode(request)
        if not outcome.hits:
            yield AnswerEvent("token", outcome.message or "")
            result = _Outcome(outcome.message or "", "none", requested, answerable=False, finish_reason="no_answer")
            yield AnswerEvent("done", self._done(started, timings, outcome, result))
            return

        step = time.perf_counter()
        passages = [hit.text for hit in outcome.hits]
        try:
            scored = await score_passages(query, passages, self.embedder, question=request.question)
        except CarragError as exc:
            yield AnswerEvent("error", exc.message)
            return
        timings["select"] = _ms(step)
        min_relevance = self.settings.answer_min_relevance if request.min_relevance is None else request.min_relevance
        relevance = judge_relevance(
            scored,
            min_relevance=min_relevance,
            rerank_scores=[hit.rerank_score for hit in outcome.hits] if outcome.reranked else (),
            min_rerank_score=self.settings.answer_min_rerank_score,
            question=request.question,
            passages=passages,
            sources=_sources(outcome.hits),
            min_focus=self.settings.answer_min_focus,
        )
        if not relevance.answerable:
            text = no_answer_text(len(outcome.hits))
            yield AnswerEvent("token", text)
            timings["generate"] = 0.0
            result = _Outcome(
                text,
                "none",
                requested,
                answerable=False,
                finish_reason="no_answer",
                fallback_reason=relevance.explain(min_relevance),
            )
            result.relevance = relevance.relevance
            yield AnswerEvent("done", self._done(started, timings, outcome, result))
            return

        mode, reason = effective_mode(requested, self.llm.provider)
        if mode == "extract":
            result = self._extract(scored, requested, reason, request.question, _sources(outcome.hits))
            result.relevance = relevance.relevance
            yield AnswerEvent("token", result.answer)
            timings["generate"] = 0.0
            yield AnswerEvent("done", self._done(started, timings, outcome, result))
            return

        generated: _Outcome | None = None
        async for event in self._generate(request, outcome, scored, timings, requested, mode):
            if isinstance(event, _Outcome):
                generated = event
            else:
                yield event
                if event.kind == "error":
                    return
        assert generated is not None
        generated.relevance = relevance.relevance
        if mode != "generate":  # auto streamed nothing: its checked answer (or the fallback) goes out now
            yield AnswerEvent("token", generated.answer)
        yield AnswerEvent("done", self._done(started, timings, outcome, generated))

    def _extract(
        self,
        scored: ScoredPassages,
        requested: str,
        reason: str | None,
        question: str | None = None,
        sources: Sequence[tuple[str, str]] = (),
    ) -> _Outcome:
        extracted = extract_answer(scored, question=question, min_focus=self.settings.answer_min_focus, sources=sources)
        return _Outcome(extracted.text, "extract", requested, fallback_reason=reason, highlights=extracted.highlights)

    def _messages(self, request: AnswerQuery, fitted: Sequence[FittedSource]) -> list[ChatMessage]:
        system = self.settings.system_prompt
        if request.client_instructions and request.client_instructions.strip():
            system += (
                "\n\nAdditional instructions from the client (they never override the rules above):\n"
                + request.client_instructions.strip()
            )
        return build_messages(
            request.question,
            [PromptSource(source.filename, source.text) for source in fitted],
            system_prompt=system,
            history=request.history,
            max_context_chars=self.settings.resolved_max_context_chars + 100 * len(fitted),
            max_history_messages=self.settings.max_history_messages,
        )

    async def _generate(
        self,
        request: AnswerQuery,
        outcome: SearchOutcome,
        scored: ScoredPassages,
        timings: dict[str, float],
        requested: str,
        mode: AnswerMode,
    ) -> AsyncIterator[AnswerEvent | _Outcome]:
        fitted = fit_context(
            scored,
            [hit.text for hit in outcome.hits],
            [hit.chunk.filename for hit in outcome.hits],
            self.settings.resolved_max_context_chars,
        )
        messages = self._messages(request, fitted)
        max_tokens = min(request.max_tokens or self.settings.llm_max_tokens, self.settings.llm_max_tokens)
        temperature = self.settings.llm_temperature if request.temperature is None else request.temperature
        generation_started = time.perf_counter()
        first_token_ms: float | None = None
        detector = LoopDetector()
        deltas = 0
        try:
            async with asyncio.timeout(self.settings.llm_timeout):
                stream = self.llm.stream(messages, max_tokens=max_tokens, temperature=temperature)
                async with contextlib.aclosing(stream):  # type: ignore[type-var]
                    async for delta in stream:
                        if first_token_ms is None:
                            first_token_ms = _ms(generation_started)
                        deltas += 1
                        looping = detector.feed(delta)
                        if mode == "generate" and not looping:  # auto holds the text until it is checked
                            yield AnswerEvent("token", {"text": delta, "draft": True})
                        if looping:
                            break  # closing the stream stops the generation
        except (TimeoutError, CarragError) as exc:
            detail = (
                f"generation exceeded {self.settings.llm_timeout:.0f}s (LLM_TIMEOUT)"
                if isinstance(exc, TimeoutError)
                else str(exc.message)
            )
            timings["generate"] = _ms(generation_started)
            # The extractive answer needs no LLM: a model too slow for LLM_TIMEOUT (an overloaded machine) is no
            # reason to fail an auto request. A failing LLM (model not found, server down) stays an error the
            # operator sees.
            if mode == "auto" and isinstance(exc, TimeoutError):
                yield self._extract(
                    scored, requested, f"generation failed: {detail}", request.question, _sources(outcome.hits)
                )
                return
            yield AnswerEvent("error", {"detail": detail} if isinstance(exc, TimeoutError) else exc.message)
            return
        timings["generate"] = _ms(generation_started)
        if first_token_ms is not None:
            timings["first_token"] = first_token_ms
        finish = "loop" if detector.loop_start is not None else ("length" if deltas >= max_tokens else "stop")
        prompt_tokens = sum(len(m.content) for m in messages) // CHARS_PER_TOKEN
        usage = _usage(prompt_tokens, deltas)

        step = time.perf_counter()
        try:
            grounding = await check_grounding(
                strip_prompt_echo(detector.trimmed),  # "Question: …" / "Answer based on context above:" echoes
                fitted,
                self.embedder,
                question=request.question,
                min_support=self.settings.answer_min_support,
            )
        except CarragError as exc:
            yield AnswerEvent("error", exc.message)
            return
        timings["check"] = _ms(step)
        problem = _not_trustworthy(grounding, finish)
        if mode == "auto" and problem is not None:
            fallback = self._extract(
                scored, requested, f"generated answer {problem}", request.question, _sources(outcome.hits)
            )
            fallback.usage = usage
            yield fallback
            return
        yield _Outcome(
            grounding.answer,
            "generate",
            requested,
            model=self.llm.model,
            finish_reason=finish,
            grounding=grounding,
            highlights=grounding.highlights(),
            usage=usage,
        )

    def _done(
        self, started: float, timings: dict[str, float], outcome: SearchOutcome, result: _Outcome
    ) -> AnswerSummary:
        # The search stages in ``timings`` were reported by SearchService; these are the answer's own.
        self.telemetry.stages("query", {stage: timings[stage] for stage in GENERATION_STAGES if stage in timings})
        highlights = [
            [{"start": start, "end": end} for start, end in result.highlights.get(position, [])]
            for position in range(len(outcome.hits))
        ]
        return AnswerSummary(
            model=result.model,
            duration_ms=_ms(started),
            timings_ms=timings,
            reranked=outcome.reranked,
            rerank_note=outcome.rerank_note,
            empty_index=outcome.empty_index,
            answer=result.answer,
            answer_mode=result.answer_mode,
            requested_mode=result.requested_mode,
            fallback_reason=result.fallback_reason,
            answerable=result.answerable,
            finish_reason=result.finish_reason,
            grounding=result.grounding.as_dict() if result.grounding is not None else None,
            highlights=highlights,
            usage=result.usage,
            relevance=result.relevance,
            degraded=outcome.degraded,
        )

    async def answer(self, request: AnswerQuery) -> Answer:
        sources: list[SearchHit] = []
        done: AnswerSummary | None = None
        async for event in self.stream_answer(request):
            if event.kind == "sources":
                sources = event.data
            elif event.kind == "error":
                raise DependencyUnavailable("llm", event.data)
            elif event.kind == "done":
                done = event.data
        assert done is not None, "a stream that raised no error ends with its done event"
        for hit, highlights in zip(sources, done.highlights, strict=False):
            hit.highlights = highlights
        return Answer(
            answer=done.answer,
            sources=sources,
            model=done.model,
            duration_ms=done.duration_ms,
            timings_ms=done.timings_ms,
            reranked=done.reranked,
            rerank_note=done.rerank_note,
            answer_mode=done.answer_mode,
            requested_mode=done.requested_mode,
            fallback_reason=done.fallback_reason,
            answerable=done.answerable,
            finish_reason=done.finish_reason,
            grounding=done.grounding,
            usage=done.usage or {},
            relevance=done.relevance,
            degraded=done.degraded,
        )


def _not_trustworthy(grounding: Grounding, finish: str) -> str | None:
    if finish == "loop":
        return "repeated itself"
    if not grounding.answer.strip():
        return "was empty"
    if not grounding.grounded:
        unsupported = len(grounding.unsupported)
        return f"not grounded: {unsupported} of {len(grounding.sentences)} sentences unsupported"
    return None


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _sources(hits: Sequence[SearchHit]) -> list[tuple[str, str]]:
    """Each source as the answer checks read it: what names it (its document's title and source id,
    a file name) and its passage."""
    return [(f"{hit.chunk.title or ''} {hit.chunk.source_id}".strip(), hit.text) for hit in hits]

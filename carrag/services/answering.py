"""Stage 4 of the query flow: search (stages 1–3), then answer — extract, generate, or refuse.

`stream_answer` yields the events that `/query/stream` sends as Server-Sent Events: ``sources``
first, then ``token`` deltas, then ``done`` (or ``error`` if generation fails mid-stream). The
``done`` event carries the `Answer`: the final text (citations fixed, loops cut, or the extractive
fallback of ``auto``) and how it was made and checked; ``answer`` returns the same record.

What a token may carry: only ``generate`` (the caller asked for the model's raw text) streams the
model's deltas as they come, each flagged ``draft``; ``done.answer`` then replaces them, and its
``grounding`` marks the sentences no source supports. Every other mode sends checked text only:
``auto`` holds the generation back until the grounding check has run and sends the kept answer (or
the extractive fallback) as one token, so unverified model text never reaches the user as the answer.

The steps, each in its own module under ``carrag/services/answers/``:

1. ``conversation``: a follow-up that leans on the history is retrieved with the previous user turn;
2. ``features`` + ``model``: every answer unit of the passages (``units``) gets the probability that
   it answers, and the request the probability that the best one does;
3. a confidence (the mean of P(the best unit is right) and P(the question is answerable)) below 0.5,
   or the request's ``min_relevance``: "the documents don't say" (no LLM);
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
from carrag.services.answers.evidence import missing_key_terms
from carrag.services.answers.extractive import extract_answer
from carrag.services.answers.features import Candidate, Passage, Reading, read_passages
from carrag.services.answers.grounding import Grounding, check_grounding
from carrag.services.answers.loops import LoopDetector
from carrag.services.answers.model import load_model
from carrag.services.answers.modes import AnswerMode, ProducedBy, effective_mode
from carrag.services.answers.scaffolding import strip_prompt_echo
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.llms.base import LLM
from carrag.services.models import ChatMessage
from carrag.services.prompt import PromptSource, build_messages
from carrag.services.requests import AnswerQuery
from carrag.services.retrieval.search import SearchHit, SearchService
from carrag.services.settings import Settings
from carrag.services.telemetry import NullTelemetry, Telemetry

CHARS_PER_TOKEN = 4  # prompt tokens are estimated; the adapters stream one token per delta
NO_ANSWER_TEXT = "The documents do not contain the answer to this question."
# The stages an answer adds to its search's timings.
GENERATION_STAGES = ("select", "generate", "first_token", "check")


@dataclass(slots=True)
class Answer:
    """One answer, as ``/query`` returns it and the ``done`` event carries it. ``model`` is None when no
    LLM wrote it; ``highlights`` has one list of {start, end} per source; ``relevance`` is the answer
    model's confidence: the mean of P(the best unit is right) and P(answerable), compared with ``min_relevance``."""

    answer: str
    sources: list[SearchHit]
    requested_mode: AnswerMode
    answer_mode: ProducedBy = "none"
    model: str | None = None
    duration_ms: float = 0.0
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False
    rerank_note: str | None = None
    empty_index: bool = False
    degraded: str | None = None  # the search was lexical only, and why (`SearchOutcome.degraded`)
    fallback_reason: str | None = None
    answerable: bool = True
    finish_reason: str = "stop"
    grounding: dict[str, Any] | None = None
    highlights: list[list[dict[str, int]]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: _usage(0, 0))
    relevance: float | None = None


@dataclass(slots=True)
class AnswerEvent:
    """``sources``: list[SearchHit]; ``token``: str (checked text) or {"text", "draft": True} (a raw
    model delta in ``generate`` mode, not checked yet); ``done``: Answer; ``error``: the CarragError
    that stopped the answer after the stream began."""

    kind: Literal["sources", "token", "done", "error"]
    data: Any


class AnswerService:
    def __init__(self, settings: Settings, search: SearchService, llm: LLM, telemetry: Telemetry | None = None) -> None:
        self.settings = settings
        self.telemetry = telemetry or NullTelemetry()
        self.search = search
        self.llm = llm
        self.model = load_model()
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

    async def stream_answer(self, request: AnswerQuery) -> AsyncGenerator[AnswerEvent, None]:
        """Errors before the first event raise (the route answers with an HTTP error; Overloaded
        when the generation queue is full); errors after it become an ``error`` event. Extractive
        requests never wait for the generation queue."""
        requested = request.answer_mode or self.settings.resolved_answer_mode
        mode, reason = effective_mode(requested, self.llm.provider)
        admission = self.generation.admit() if mode != "extract" else contextlib.nullcontext()
        async with admission, contextlib.aclosing(self._stream_answer(request, requested, mode, reason)) as events:
            async for event in events:
                yield event

    async def _stream_answer(
        self, request: AnswerQuery, requested: AnswerMode, mode: AnswerMode, reason: str | None
    ) -> AsyncGenerator[AnswerEvent, None]:
        started = time.perf_counter()
        query = retrieval_query(request.question, request.history)
        outcome = await self.search.search(replace(request.search, question=query))
        yield AnswerEvent("sources", outcome.hits)
        answer = Answer(
            "",
            outcome.hits,
            requested,
            timings_ms=dict(outcome.timings_ms),
            reranked=outcome.reranked,
            rerank_note=outcome.rerank_note,
            empty_index=outcome.empty_index,
            degraded=outcome.degraded,
        )
        if not outcome.hits:
            self._refuse(answer, outcome.message or "", None)
            yield AnswerEvent("token", answer.answer)
            yield AnswerEvent("done", self._done(started, answer))
            return

        step = time.perf_counter()
        try:
            reading = await read_passages(request.question, passages_of(outcome.hits), self.embedder, query=query)
        except CarragError as exc:
            yield AnswerEvent("error", exc)
            return
        ranked = self.model.rank(reading)
        confidence = self.model.confidence(reading, ranked)
        answer.timings_ms["select"] = _ms(step)
        answer.relevance = round(confidence, 4)
        threshold = self.min_confidence(request)
        if confidence < threshold:
            self._refuse(answer, no_answer_text(len(outcome.hits)), _refusal_reason(reading, confidence, threshold))
            yield AnswerEvent("token", answer.answer)
            yield AnswerEvent("done", self._done(started, answer))
            return

        answer.fallback_reason = reason
        if mode == "extract":
            self._extract(answer, ranked, reason)
            yield AnswerEvent("token", answer.answer)
            yield AnswerEvent("done", self._done(started, answer))
            return

        async for event in self._generate(request, answer, reading, ranked, mode):
            yield event
            if event.kind == "error":
                return
        if mode != "generate":  # auto streamed nothing: its checked answer (or the fallback) goes out now
            yield AnswerEvent("token", answer.answer)
        yield AnswerEvent("done", self._done(started, answer))

    def min_confidence(self, request: AnswerQuery) -> float:
        """The request's ``min_relevance``, else ANSWER_MIN_RELEVANCE, else the model's 0.5 (a refusal costing
        as much as a wrong answer)."""
        for value in (request.min_relevance, self.settings.answer_min_relevance):
            if value is not None:
                return value
        return self.model.threshold

    def _refuse(self, answer: Answer, text: str, reason: str | None) -> None:
        answer.answer, answer.answer_mode, answer.answerable = text, "none", False
        answer.finish_reason, answer.fallback_reason = "no_answer", reason
        answer.timings_ms.setdefault("generate", 0.0)

    def _extract(self, answer: Answer, ranked: Sequence[Candidate], reason: str | None) -> None:
        extracted = extract_answer(ranked, self.model.companion)
        answer.answer, answer.answer_mode, answer.fallback_reason = extracted.text, "extract", reason
        answer.model, answer.grounding, answer.finish_reason = None, None, "stop"
        answer.highlights = _highlights(extracted.highlights, len(answer.sources))
        answer.timings_ms.setdefault("generate", 0.0)

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
        self, request: AnswerQuery, answer: Answer, reading: Reading, ranked: Sequence[Candidate], mode: AnswerMode
    ) -> AsyncIterator[AnswerEvent]:
        """Generate into ``answer`` (or, for ``auto``, fall back to the extractive one); yields the stream's
        events (draft tokens of ``generate``, an ``error``)."""
        timings = answer.timings_ms
        fitted = fit_context(
            reading, [hit.chunk.filename for hit in answer.sources], self.settings.resolved_max_context_chars
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
            timings["generate"] = _ms(generation_started)
            # The extractive answer needs no LLM: a model too slow for LLM_TIMEOUT (an overloaded machine) is no
            # reason to fail an auto request. A failing LLM (model not found, server down) stays an error the
            # operator sees.
            if isinstance(exc, TimeoutError):
                detail = f"generation exceeded {self.settings.llm_timeout:.0f}s (LLM_TIMEOUT)"
                if mode == "auto":
                    self._extract(answer, ranked, f"generation failed: {detail}")
                    return
                yield AnswerEvent("error", DependencyUnavailable("llm", detail))
                return
            yield AnswerEvent("error", exc)
            return
        timings["generate"] = _ms(generation_started)
        if first_token_ms is not None:
            timings["first_token"] = first_token_ms
        finish = "loop" if detector.loop_start is not None else ("length" if deltas >= max_tokens else "stop")
        usage = _usage(sum(len(m.content) for m in messages) // CHARS_PER_TOKEN, deltas)

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
            yield AnswerEvent("error", exc)
            return
        timings["check"] = _ms(step)
        problem = _not_trustworthy(grounding, finish)
        answer.usage = usage
        if mode == "auto" and problem is not None:
            self._extract(answer, ranked, f"generated answer {problem}")
            return
        answer.answer, answer.answer_mode, answer.model = grounding.answer, "generate", self.llm.model
        answer.finish_reason, answer.grounding = finish, grounding.as_dict()
        answer.highlights = _highlights(grounding.highlights(), len(answer.sources))

    def _done(self, started: float, answer: Answer) -> Answer:
        # The search stages in ``timings_ms`` were reported by SearchService; these are the answer's own.
        timings = answer.timings_ms
        self.telemetry.stages("query", {stage: timings[stage] for stage in GENERATION_STAGES if stage in timings})
        answer.duration_ms = _ms(started)
        if not answer.highlights:
            answer.highlights = [[] for _ in answer.sources]
        return answer

    async def answer(self, request: AnswerQuery) -> Answer:
        done: Answer | None = None
        async for event in self.stream_answer(request):
            if event.kind == "error":
                raise event.data  # the component's own error (its class decides the status)
            if event.kind == "done":
                done = event.data
        assert done is not None, "a stream that raised no error ends with its done event"
        for hit, highlights in zip(done.sources, done.highlights, strict=False):
            hit.highlights = highlights
        return done


def no_answer_text(source_count: int) -> str:
    if not source_count:
        return NO_ANSWER_TEXT
    if source_count == 1:
        return f"{NO_ANSWER_TEXT} The closest passage is listed as a source."
    return f"{NO_ANSWER_TEXT} The {source_count} closest passages are listed as sources."


def _refusal_reason(reading: Reading, confidence: float, threshold: float) -> str:
    missing = missing_key_terms(reading.question, [text for p in reading.passages for text in (p.text, p.title)])
    said = f"no passage mentions {', '.join(missing)}; " if missing else ""
    return f"{said}no passage text is likely to answer (confidence {confidence:.2f} < {threshold:.2f})"


def _not_trustworthy(grounding: Grounding, finish: str) -> str | None:
    if finish == "loop":
        return "repeated itself"
    if not grounding.answer.strip():
        return "was empty"
    if not grounding.grounded:
        unsupported = len(grounding.unsupported)
        return f"not grounded: {unsupported} of {len(grounding.sentences)} sentences unsupported"
    return None


def _highlights(spans: dict[int, list[tuple[int, int]]], count: int) -> list[list[dict[str, int]]]:
    return [[{"start": start, "end": end} for start, end in spans.get(position, [])] for position in range(count)]


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def passages_of(hits: Sequence[SearchHit]) -> list[Passage]:
    """The hits as the answer step reads them: the passage, what names its document, where the winning
    chunk lies in it, its rank and fusion score."""
    best = max((hit.rrf_score or hit.score for hit in hits), default=0.0) or 1.0
    passages = []
    for rank, hit in enumerate(hits):
        start = hit.text.find(hit.chunk.text)
        passages.append(
            Passage(
                text=hit.text,
                title=f"{hit.chunk.title or ''} {hit.chunk.source_id}".strip(),
                section=hit.chunk.section or "",
                matched=(start, start + len(hit.chunk.text)) if start >= 0 else None,
                rank=rank,
                fusion=(hit.rrf_score or hit.score) / best,
            )
        )
    return passages

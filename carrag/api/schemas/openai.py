"""The subset of OpenAI's Chat Completions and Models API that Carrag speaks. Parameters meaningless for
a grounded answer (tools, logprobs) are accepted and ignored so frontends that send them still work;
Carrag's own knobs ride along as extra body fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from carrag.api.schemas.base import Schema
from carrag.api.schemas.query import AnswerOptions, Grounding, Source, Usage


class TextPart(Schema):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class ChatMessageIn(Schema):
    model_config = ConfigDict(extra="allow")  # name, tool_call_id, ...

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None


class ChatCompletionRequest(AnswerOptions):
    model_config = ConfigDict(extra="allow")  # tools, user, ... are accepted and ignored

    model: str = Field(..., max_length=200, examples=["carrag"])
    messages: list[ChatMessageIn] = Field(..., min_length=1, max_length=200)
    stream: bool = False
    n: int | None = Field(None, description="Only 1 is supported.")
    max_tokens: int | None = Field(None, ge=1, description="Most tokens generated (capped at LLM_MAX_TOKENS).")
    max_completion_tokens: int | None = Field(None, ge=1, description="OpenAI's newer name for max_tokens.")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature (default LLM_TEMPERATURE).")
    # Carrag's extras
    top_k: int | None = Field(
        None, ge=1, le=1000, description="Passages retrieved (default DEFAULT_TOP_K; at most MAX_TOP_K)."
    )
    tags: list[str] | None = Field(None, max_length=50, description="Only documents with any of these tags.")
    source: str | None = Field(None, max_length=2048, description="Exact source id or glob (`*.md`).")
    rerank: bool | None = Field(None, description="Override RERANK_ENABLED for this request.")
    collection: str | None = Field(
        None, max_length=64, description='Answer from this collection (or `model: "carrag:<collection>"`).'
    )
    collections: list[str] | None = Field(None, min_length=1, max_length=100, description="Several collections.")


class ModelOut(Schema):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "carrag"


class ModelListOut(Schema):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class AssistantMessage(Schema):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: str | None = None


class Choice(Schema):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop", "length"] = Field(
        "stop", description="`length`: cut by the token limit or a repetition loop (see `carrag.finish_reason`)."
    )
    logprobs: None = None


class ChatCompletionOut(Schema):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage = Field(description="Token counts of the generation (prompt tokens estimated); all 0 when no LLM ran.")
    sources: list[Source] = Field(
        default_factory=list, description="Carrag extra: the passages the answer was generated from."
    )
    grounding: Grounding | None = Field(None, description="Carrag extra: the grounding check of the answer.")
    carrag: dict[str, Any] = Field(
        default_factory=dict,
        description="Carrag extra: llm (null when none ran), answer_mode, requested_mode, fallback_reason, "
        "answerable, finish_reason, relevance, duration_ms, timings_ms, reranked, rerank_note, empty_index, degraded.",
    )

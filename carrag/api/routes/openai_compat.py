"""OpenAI-compatible API: ``GET /v1/models`` and ``POST /v1/chat/completions`` (stream and not), answering
as a model named ``carrag`` by the ``/query`` path (`AnswerService.stream_answer`).

The last message is the question, earlier ones the history; system messages follow Carrag's
SYSTEM_PROMPT, never replace it. Sources, grounding and Carrag's details ride in extra fields (the SDK's
``model_extra``). OpenAI clients never read ``grounding``, so unsupported sentences are listed in a
note at the end of the content, and an ``auto`` stream sends its answer once checked (an OpenAI stream
cannot take back text). Errors carry OpenAI's ``{"error": {...}}`` beside ``detail``.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from carrag.api.deps import AnswersDep, CollectionsDep, PrincipalDep, RequestsDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.openai import (
    AssistantMessage,
    ChatCompletionOut,
    ChatCompletionRequest,
    ChatMessageIn,
    Choice,
    ModelListOut,
    ModelOut,
)
from carrag.api.schemas.query import SOURCE_LIST, Grounding, Usage, jsonable, stream_payload
from carrag.api.streaming import opened
from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.answering import AnswerEvent
from carrag.services.answers.marking import unsupported_note
from carrag.services.errors import InvalidInput, NotFound
from carrag.services.models import DEFAULT_COLLECTION, ChatMessage
from carrag.services.requests import AnswerQuery, RequestFactory


class OpenAIErrorRoute(JsonBodyRoute):
    """Answers errors as the app always does, plus OpenAI's ``error`` object in the body."""

    def get_route_handler(self):
        handle = super().get_route_handler()

        async def handle_with_openai_errors(request: Request) -> Response:
            try:
                return await handle(request)
            except Exception as exc:
                answer = _registered_handler(request, exc)
                if answer is None:
                    raise
                return with_openai_error(await answer(request, exc))

        return handle_with_openai_errors


def _registered_handler(request: Request, exc: Exception):
    handlers = request.app.exception_handlers
    for cls in type(exc).__mro__:
        if cls in handlers and cls is not Exception:
            return handlers[cls]
    return None


def with_openai_error(response: Response) -> Response:
    try:
        body = json.loads(bytes(response.body))
    except ValueError:
        return response
    detail = body.get("detail")
    if not isinstance(detail, str):  # request validation: a list of problems
        detail = "; ".join(f"{'.'.join(map(str, e.get('loc', [])))}: {e.get('msg')}" for e in detail or [])
    status = response.status_code
    kind = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error"
    )
    body["error"] = {"message": detail, "type": kind, "param": None, "code": None}
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
    return JSONResponse(body, status_code=status, headers=headers)


router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIErrorRoute)

MODEL_ID = "carrag"
MAX_MESSAGE_CHARS = 20_000
CREATED = int(time.time())


@router.get(
    "/models",
    response_model=ModelListOut,
    summary="OpenAI-compatible model list (carrag, and carrag:<collection> per collection)",
)
async def list_models(collections: CollectionsDep, principal: PrincipalDep) -> ModelListOut:
    """``carrag`` (the default collection) and ``carrag:<name>`` for each other collection (those the
    key may read)."""
    readable = await collections.list(principal)
    named = [
        ModelOut(id=f"{MODEL_ID}:{c.name}", created=CREATED) for c in readable if c.collection_id != DEFAULT_COLLECTION
    ]
    default = [ModelOut(id=MODEL_ID, created=CREATED)] if principal.can_read(DEFAULT_COLLECTION) else []
    return ModelListOut(data=[*default, *named])


def message_text(message: ChatMessageIn) -> str:
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    texts = []
    for part in message.content:
        if part.type != "text" or part.text is None:
            raise InvalidInput(f"Only text message content is supported, not {part.type!r}.")
        texts.append(part.text)
    return "\n".join(texts)


def model_collection(model: str) -> str | None:
    """``carrag`` → None (the request's own collection fields, else ``default``); ``carrag:<name>`` → name."""
    base, _, collection = model.partition(":")
    if base != MODEL_ID or (model != MODEL_ID and not collection):
        raise NotFound(
            f"The model {model!r} does not exist; Carrag serves {MODEL_ID!r}, and {MODEL_ID + ':<collection>'!r} "
            "to answer from one collection."
        )
    return collection or None


def answer_query(
    body: ChatCompletionRequest, requests: RequestFactory, principal: Principal = FULL_ACCESS
) -> AnswerQuery:
    collection = model_collection(body.model)
    if collection is not None and (body.collection or body.collections) and body.collection != collection:
        raise InvalidInput(f"The model names collection {collection!r}; the collection fields name another.")
    if body.n not in (None, 1):
        raise InvalidInput("Only n=1 is supported.")
    conversation = [m for m in body.messages if m.role in ("user", "assistant")]
    instructions = "\n".join(message_text(m) for m in body.messages if m.role in ("system", "developer"))
    if not conversation or conversation[-1].role != "user":
        raise InvalidInput("The last message must be the user's question (role 'user').")
    texts = [message_text(m) for m in conversation]
    if any(len(text) > MAX_MESSAGE_CHARS for text in texts):
        raise InvalidInput(f"A message is longer than {MAX_MESSAGE_CHARS} characters.")
    search = requests.search(
        texts[-1],
        top_k=body.top_k,
        tags=body.tags,
        source=body.source,
        rerank=body.rerank,
        collection=collection or body.collection,
        collections=None if collection else body.collections,
        principal=principal,
    )
    return AnswerQuery(
        search,
        [
            ChatMessage("user" if m.role == "user" else "assistant", text)
            for m, text in zip(conversation[:-1], texts[:-1], strict=True)
        ],
        answer_mode=body.answer_mode,
        min_relevance=body.min_relevance,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        temperature=body.temperature,
        client_instructions=instructions[:MAX_MESSAGE_CHARS] or None,
    )


NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}  # an answer no LLM wrote


def carrag_meta(done: dict[str, Any]) -> dict[str, Any]:
    """The ``carrag`` extra: the ``done`` summary but the answer, grounding, highlights and usage."""
    meta = {"llm": done.get("model")}
    meta.update({k: v for k, v in done.items() if k not in ("model", "answer", "grounding", "highlights", "usage")})
    return meta


def openai_finish_reason(finish_reason: str) -> str:
    """OpenAI's values: a loop cut the answer short like the token limit does."""
    return "length" if finish_reason in ("length", "loop") else "stop"


@router.post(
    "/chat/completions",
    response_model=ChatCompletionOut,
    summary="OpenAI-compatible chat completion answered from the documents",
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "With stream=true: chat.completion.chunk events."}
    },
)
async def chat_completions(
    body: ChatCompletionRequest, answers: AnswersDep, requests: RequestsDep, principal: PrincipalDep
) -> ChatCompletionOut | StreamingResponse:
    request = answer_query(body, requests, principal)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if not body.stream:
        answer = await answers.answer(request)
        return ChatCompletionOut(
            id=completion_id,
            created=created,
            model=MODEL_ID,
            choices=[
                Choice(
                    message=AssistantMessage(content=answer.answer + unsupported_note(answer.grounding)),
                    finish_reason=openai_finish_reason(answer.finish_reason),  # type: ignore[arg-type]
                )
            ],
            usage=Usage.model_validate(answer.usage or NO_USAGE),
            sources=SOURCE_LIST.validate_python(answer.sources),
            grounding=Grounding.model_validate(answer.grounding) if answer.grounding is not None else None,
            carrag=carrag_meta(jsonable(stream_payload("done", answer))),  # as the stream's last chunk has it
        )

    events = await opened(answers.stream_answer(request))

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        payload = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
            **extra,
        }
        return f"data: {json.dumps(payload)}\n\n"

    def translate(event: AnswerEvent) -> str:
        payload = jsonable(stream_payload(event.kind, event.data))
        if event.kind == "sources":
            return chunk({"role": "assistant", "content": ""}, sources=payload)
        if event.kind == "token":
            return chunk({"content": payload["text"]})
        if event.kind == "done":
            meta = carrag_meta(payload)
            extra = {"grounding": payload["grounding"], "usage": payload["usage"] or NO_USAGE, "carrag": meta}
            note = unsupported_note(payload["grounding"])
            marked = chunk({"content": note}) if note else ""
            return marked + chunk({}, openai_finish_reason(payload["finish_reason"]), **extra) + "data: [DONE]\n\n"
        return f"data: {json.dumps({'error': {'message': payload['detail'], 'type': 'server_error'}})}\n\n"

    async def stream() -> AsyncIterator[str]:
        async with contextlib.aclosing(events):  # closing stops generation when the client has gone
            async for event in events:
                yield translate(event)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )

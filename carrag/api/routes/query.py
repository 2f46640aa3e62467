"""POST /query (whole answer) and POST /query/stream (SSE: ``sources``, ``token`` deltas, then ``done``
with the final answer and how it was made, or ``error`` if generation fails after streaming began).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent

from carrag.api.deps import AnswersDep, PrincipalDep, RequestsDep, SettingsDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.query import QueryRequest, QueryResponse, jsonable, stream_payload
from carrag.api.streaming import opened
from carrag.services.answering import Answer

router = APIRouter(tags=["query"], route_class=JsonBodyRoute)


@router.post("/query", response_model=QueryResponse, summary="Answer a question from the documents")
async def query(body: QueryRequest, answers: AnswersDep, requests: RequestsDep, principal: PrincipalDep) -> Answer:
    return await answers.answer(body.to_query(requests, principal))


@router.post(
    "/query/stream",
    summary="Answer a question, streamed as Server-Sent Events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "sources, token…, done | error"}},
)
async def query_stream(
    body: QueryRequest, answers: AnswersDep, requests: RequestsDep, settings: SettingsDep, principal: PrincipalDep
) -> EventSourceResponse:
    events = await opened(answers.stream_answer(body.to_query(requests, principal)))

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async with contextlib.aclosing(events):  # closing stops generation when the client has gone
            async for event in events:
                payload = jsonable(stream_payload(event.kind, event.data))
                yield ServerSentEvent(data=json.dumps(payload), event=event.kind)

    return EventSourceResponse(stream(), ping=settings.sse_keepalive_seconds)

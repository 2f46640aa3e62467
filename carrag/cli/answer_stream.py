"""The one walk over a streamed answer (`CarragClient.stream_query`'s events): `carrag query` shows the
text as it arrives, `carrag query --json` only keeps the result; both get the same `FinishedAnswer`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from carrag.api.schemas.query import QueryResponse, Source, StreamDone, StreamError, StreamToken
from carrag.cli.client import ClientError, StreamEvent

INCOMPLETE_STREAM = "the answer stream ended without a result"


@dataclass(slots=True)
class FinishedAnswer:
    """What a whole answer stream said: the passages, the text streamed, and the `done` summary (whose
    ``answer``, when set, is the checked answer that replaces the streamed text). ``drafted``: some of
    the streamed text was the model's unchecked draft (``generate`` mode)."""

    done: StreamDone
    streamed: str = ""
    sources: list[Source] = field(default_factory=list)
    drafted: bool = False

    @property
    def answer(self) -> str:
        return self.done.answer or self.streamed

    def response(self) -> QueryResponse:
        """The answer in POST /query's shape."""
        fields = {name: getattr(self.done, name) for name in QueryResponse.model_fields if hasattr(self.done, name)}
        return QueryResponse.model_validate({**fields, "answer": self.answer, "sources": self.sources})


async def follow_answer(
    events: AsyncGenerator[StreamEvent], on_token: Callable[[StreamToken], None] | None = None
) -> FinishedAnswer:
    """Read the stream to its end; ``on_token`` gets each token (its text delta, and whether it is an
    unchecked draft) as it arrives. An `error` event, or an end without `done`, raises `ClientError`;
    the stream is closed either way."""
    sources: list[Source] = []
    streamed = ""
    drafted = False
    done: StreamDone | None = None
    async with contextlib.aclosing(events):
        async for _, data in events:
            if isinstance(data, list):
                sources = data
            elif isinstance(data, StreamToken):
                streamed += data.text
                drafted = drafted or data.draft
                if on_token is not None:
                    on_token(data)
            elif isinstance(data, StreamError):
                raise ClientError(data.detail)
            else:
                done = data
    if done is None:
        raise ClientError(INCOMPLETE_STREAM)
    return FinishedAnswer(done, streamed, sources, drafted)

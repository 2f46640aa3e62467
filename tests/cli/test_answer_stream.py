"""The one walk over a streamed answer (`carrag.cli.answer_stream`) and what `carrag query` prints from
it, with a scripted stream in place of a model: tokens as they arrive, the checked answer when it
differs, the notes line (mode, fallback, finish reason, unsupported sentences), the sources, errors
in the middle of a stream and a stream that ends without its result; `--json` from the same walk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator

import pytest
from typer.testing import CliRunner

import carrag.cli.running
from carrag.api.schemas.query import QueryRequest, Source, StreamDone, StreamError, StreamPayload, StreamToken
from carrag.cli.answer_stream import INCOMPLETE_STREAM, follow_answer
from carrag.cli.client import ClientError, StreamEvent
from carrag.cli.main import app
from carrag.cli.questions import DRAFT_LABEL
from carrag.services.answers.marking import MARK

SOURCES = [
    Source(
        document_id="d1", filename="manual.pdf", source_id="manual.pdf", chunk_index=7, text="...", score=0.871,
        pages=[3, 4],
    ),
    Source(document_id="d2", filename="guide.md", source_id="docs/guide.md", chunk_index=0, text="...", score=0.5),
]  # fmt: skip


def done(**fields) -> StreamDone:
    return StreamDone.model_validate({"model": "test", "duration_ms": 12.0, "timings_ms": {}, **fields})


def events(*payloads: StreamPayload) -> list[StreamEvent]:
    kinds = {list: "sources", StreamToken: "token", StreamDone: "done", StreamError: "error"}
    return [(kinds[type(payload)], payload) for payload in payloads]


class ScriptedClient:
    """A `CarragClient` whose answer stream is the given events (only what `carrag query` uses)."""

    def __init__(self, script: list[StreamEvent]) -> None:
        self.script = script
        self.requests: list[QueryRequest] = []
        self.closed_streams = 0

    async def stream_query(self, request: QueryRequest) -> AsyncGenerator[StreamEvent]:
        self.requests.append(request)
        try:
            for event in self.script:
                yield event
        finally:
            self.closed_streams += 1

    async def aclose(self) -> None:
        pass


def follow(script: list[StreamEvent], tokens: list[str] | None = None):
    client = ScriptedClient(script)
    on_token = (lambda token: tokens.append(token.text)) if tokens is not None else None
    finished = asyncio.run(follow_answer(client.stream_query(QueryRequest(question="q")), on_token))
    return finished, client


def test_the_walk_gathers_sources_tokens_and_the_result() -> None:
    tokens: list[str] = []
    finished, client = follow(events(SOURCES, StreamToken(text="Use "), StreamToken(text="DOT 4."), done()), tokens)
    assert tokens == ["Use ", "DOT 4."], "each delta as it arrives"
    assert finished.streamed == "Use DOT 4." and finished.answer == "Use DOT 4." and finished.sources == SOURCES
    response = finished.response()
    assert response.answer == "Use DOT 4." and response.sources == SOURCES and response.model == "test"
    assert client.closed_streams == 1

    checked, _ = follow(events(StreamToken(text="draft"), done(answer="Checked [Source 1].")))
    assert checked.answer == checked.response().answer == "Checked [Source 1].", "done's answer replaces the tokens"


def test_an_error_event_or_a_missing_result_is_a_client_error_and_the_stream_is_closed() -> None:
    client = ScriptedClient(events(StreamToken(text="partial"), StreamError(detail="the model crashed"), done()))
    with pytest.raises(ClientError, match="the model crashed"):
        asyncio.run(follow_answer(client.stream_query(QueryRequest(question="q"))))
    assert client.closed_streams == 1, "the stream is closed at the error, not left to the garbage collector"

    with pytest.raises(ClientError, match=INCOMPLETE_STREAM):
        follow(events(SOURCES, StreamToken(text="cut off")))


def run_query(monkeypatch: pytest.MonkeyPatch, script: list[StreamEvent], *args: str) -> tuple[object, ScriptedClient]:
    client = ScriptedClient(script)
    monkeypatch.setattr(carrag.cli.running, "open_client", lambda url, api_key: client)
    result = CliRunner().invoke(app, ["query", "How often?", *args], env={"NO_COLOR": "1", "COLUMNS": "200"})
    return result, client


def test_query_prints_tokens_the_checked_answer_the_notes_and_the_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    grounding = {"grounded": False, "support": 0.1, "sentences": [], "unsupported": [0, 2]}
    summary = done(
        answer="Every two years [Source 1].",
        finish_reason="length",
        fallback_reason="the generated answer was cut",
        grounding=grounding,
    )
    script = events(SOURCES, StreamToken(text="Every "), StreamToken(text="year"), summary)
    result, client = run_query(monkeypatch, script, "--top-k", "2")
    assert result.exit_code == 0, result.output
    assert client.requests[0].top_k == 2
    assert result.stdout == (
        "Every year\n"
        "\nChecked answer\n"
        "Every two years [Source 1].\n"
        "(answer: generate; the generated answer was cut; finish: length; 2 unsupported sentence(s))\n"
        "\nSources\n"
        "  [1] manual.pdf (pp. 3–4, chunk 7) score 0.871\n"
        "  [2] docs/guide.md (chunk 0) score 0.500\n"
    )


def test_query_shows_no_checked_answer_when_the_check_kept_the_streamed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    script = events(StreamToken(text="It says nothing."), done(answer="It says nothing. ", finish_reason="no_answer"))
    result, _ = run_query(monkeypatch, script)
    assert result.exit_code == 0, result.output
    assert result.stdout == "It says nothing.\n(answer: generate)\n", "no sources: no Sources heading"


def test_query_reports_an_error_in_the_middle_of_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    script = events(SOURCES, StreamToken(text="Bleed the"), StreamError(detail="the model crashed"), done())
    result, client = run_query(monkeypatch, script)
    assert result.exit_code == 1
    assert result.stdout == "Bleed the\n", "what streamed stays, on a line of its own; no sources"
    assert result.stderr.strip() == "error: the model crashed"
    assert client.closed_streams == 1

    before_any_token, _ = run_query(monkeypatch, events(StreamError(detail="no model")))
    assert before_any_token.exit_code == 1 and before_any_token.stdout == ""
    assert before_any_token.stderr.strip() == "error: no model"


def test_query_fails_when_the_stream_ends_without_its_result(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = run_query(monkeypatch, events(SOURCES, StreamToken(text="Bleed")))
    assert result.exit_code == 1, "a cut-off answer is not a success"
    assert result.stdout == "Bleed\n" and result.stderr.strip() == f"error: {INCOMPLETE_STREAM}"


def test_query_json_is_post_query_shape_from_the_same_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    script = events(SOURCES, StreamToken(text="draft"), done(answer="Every two years [Source 1].", reranked=True))
    result, _ = run_query(monkeypatch, script, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["answer"] == "Every two years [Source 1]." and answer["reranked"] is True
    assert [source["source_id"] for source in answer["sources"]] == ["manual.pdf", "docs/guide.md"]
    assert "highlights" not in answer, "only POST /query's fields"

    failed, _ = run_query(monkeypatch, events(StreamToken(text="x"), StreamError(detail="boom")), "--json")
    assert failed.exit_code == 1 and failed.stdout == "" and failed.stderr.strip() == "error: boom"


def test_query_labels_a_draft_and_marks_unsupported_sentences_in_the_checked_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Acceptance report P4/P5: the model's invented "3.2 psi" was printed first with nothing saying it was unchecked."""
    answer = "Inflate to 35 psi [Source 1]. It holds 3.2 psi."
    grounding = {
        "grounded": False,
        "support": 0.2,
        "sentences": [
            {"text": "Inflate to 35 psi [Source 1].", "start": 0, "end": 29, "support": 0.9, "supported": True},
            {"text": "It holds 3.2 psi.", "start": 30, "end": 47, "support": 0.2, "supported": False},
        ],
        "unsupported": [1],
    }
    draft = [StreamToken(text="Inflate to 35 psi [1]. ", draft=True), StreamToken(text="It holds 3.2 psi.", draft=True)]
    script = events(*draft, done(answer=answer, answer_mode="generate", grounding=grounding))
    result, _ = run_query(monkeypatch, script)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"{DRAFT_LABEL}\n"
        "Inflate to 35 psi [1]. It holds 3.2 psi.\n"
        "\nChecked answer\n"
        f"Inflate to 35 psi [Source 1]. It holds 3.2 psi. {MARK}\n"
        "(answer: generate; 1 unsupported sentence(s))\n"
    )


def test_query_prints_a_checked_auto_answer_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto sends its checked answer as one token: printed once, no draft label, no second copy."""
    text = "Use DOT 4 LV [Source 1]."
    script = events(
        SOURCES[:1], StreamToken(text=text), done(answer=text, answer_mode="extract", requested_mode="auto")
    )
    result, _ = run_query(monkeypatch, script)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{text}\n(answer: extract)\n") and DRAFT_LABEL not in result.stdout

"""The OpenAI-compatible API, driven by the real ``openai`` SDK against a real uvicorn server on
127.0.0.1. Generation is Carrag's Ollama adapter talking to a loopback server that replays a recorded
Ollama chat stream, so the answer text is known: the recorded deltas, in order."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import openai
import pytest

from carrag.api.main import create_app
from carrag.services.answers.marking import NOTE_HEADING, unsupported_note
from carrag.services.container import Container
from carrag.services.llms.ollama import OllamaLLM
from carrag.services.requests import IngestCommand
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.live_server import LiveServer
from tests.ollama_replay import MISSING_MODEL, RECORDINGS, OllamaReplay

API_KEY = "sekret"
QUESTION = "How often should the brake fluid be replaced?"
RECORDED_ANSWER = "".join(
    json.loads(line)["message"]["content"] for line in (RECORDINGS / "chat_stream.ndjson").read_text().splitlines()
)


@pytest.fixture(scope="module")
def replay() -> Iterator[OllamaReplay]:
    with OllamaReplay() as server:
        yield server


async def carrag_with_ollama(tmp_path, embedding_backend, replay: OllamaReplay, model: str) -> Container:
    settings = make_settings(tmp_path, api_keys=API_KEY, tagger="keywords", llm="ollama")
    container = await open_container(settings, embedding_backend, llm=OllamaLLM(replay.url, model))
    for name in ("brakes.txt", "oil_service.txt", "tire_pressure.txt"):
        await container.ingestion.ingest_file((FIXTURES / "corpus" / name).read_bytes(), name, IngestCommand())
    return container


@pytest.fixture(scope="module")
async def server(tmp_path_factory, embedding_backend, replay: OllamaReplay) -> AsyncIterator[LiveServer]:
    container = await carrag_with_ollama(tmp_path_factory.mktemp("openai"), embedding_backend, replay, "llama3.2")
    with LiveServer(create_app(container=container)) as live:
        yield live
    await close_container(container)


@pytest.fixture
async def sdk(server: LiveServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=API_KEY, max_retries=0) as client:
        yield client


async def test_models_list_has_carrag(sdk: openai.AsyncOpenAI) -> None:
    models = [model async for model in sdk.models.list()]
    assert [model.id for model in models] == ["carrag"]
    assert models[0].owned_by == "carrag"


async def test_non_stream_completion_answers_with_sources(sdk: openai.AsyncOpenAI) -> None:
    completion = await sdk.chat.completions.create(
        model="carrag",
        messages=[{"role": "system", "content": "You are a pirate."}, {"role": "user", "content": QUESTION}],
        extra_body={"top_k": 2, "rerank": False, "answer_mode": "generate"},
    )
    assert completion.object == "chat.completion" and completion.model == "carrag"
    assert completion.choices[0].message.role == "assistant"
    grounding = completion.model_extra["grounding"]
    content = completion.choices[0].message.content
    assert content == RECORDED_ANSWER + unsupported_note(grounding), "unsupported sentences are named in the text"
    assert content.endswith(f"{NOTE_HEADING}\n- Snapshots are retained for thirty days.\n- The answer is: 30 days")
    assert completion.choices[0].finish_reason == "stop"
    sources = completion.model_extra["sources"]
    assert 1 <= len(sources) <= 2
    assert sources[0]["source_id"] == "brakes.txt" and "brake fluid" in sources[0]["text"]
    meta = completion.model_extra["carrag"]
    assert meta["llm"] == "llama3.2" and meta["reranked"] is False and meta["timings_ms"]["generate"] >= 0
    assert meta["answer_mode"] == "generate" and meta["finish_reason"] == "stop"
    assert grounding["grounded"] is False, "the recorded answer (snapshots, 30 days) is not about brake fluid"
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens


async def test_auto_falls_back_to_the_documents_when_the_generated_answer_is_not_grounded(
    sdk: openai.AsyncOpenAI,
) -> None:
    completion = await sdk.chat.completions.create(
        model="carrag", messages=[{"role": "user", "content": QUESTION}], extra_body={"answer_mode": "auto"}
    )
    meta = completion.model_extra["carrag"]
    assert meta["answer_mode"] == "extract" and meta["requested_mode"] == "auto"
    assert meta["fallback_reason"].startswith("generated answer not grounded")
    assert meta["llm"] is None, "the answer was not written by the LLM"
    content = completion.choices[0].message.content
    assert "brake fluid" in content and "[Source 1]" in content and "30 days" not in content


async def test_stream_is_openai_chunks_with_sources_first(sdk: openai.AsyncOpenAI) -> None:
    stream = await sdk.chat.completions.create(
        model="carrag",
        stream=True,
        messages=[{"role": "user", "content": QUESTION}],
        extra_body={"answer_mode": "generate"},
    )
    chunks = [chunk async for chunk in stream]

    assert len({chunk.id for chunk in chunks}) == 1 and all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model_extra["sources"][0]["source_id"] == "brakes.txt"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    note = unsupported_note(chunks[-1].model_extra["grounding"])
    assert note and text == RECORDED_ANSWER + note, "the raw answer streams, then a note names what is unsupported"
    assert chunks[-2].choices[0].delta.content == note
    assert len(chunks) > 3, "the answer arrives as many deltas"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["carrag"]["llm"] == "llama3.2"
    assert chunks[-1].model_extra["grounding"]["sentences"], "the last chunk carries the grounding check"


async def test_auto_stream_sends_only_the_checked_answer(sdk: openai.AsyncOpenAI) -> None:
    stream = await sdk.chat.completions.create(
        model="carrag",
        stream=True,
        messages=[{"role": "user", "content": QUESTION}],
        extra_body={"answer_mode": "auto"},
    )
    chunks = [chunk async for chunk in stream]
    contents = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices[0].delta.content]
    assert len(contents) == 1, "the checked answer in one chunk, nothing of the draft"
    assert "brake fluid" in contents[0] and "30 days" not in contents[0] and "thirty" not in contents[0]
    assert chunks[-1].model_extra["carrag"]["answer_mode"] == "extract"


async def test_usage_is_always_an_object_zero_when_no_llm_ran(sdk: openai.AsyncOpenAI, server: LiveServer) -> None:
    """As documented (docs/api.md) and as the OpenAPI schema says: never null, which OpenAI clients do
    not expect from a completion; an extract answer, which no LLM wrote, counts no tokens."""
    zero = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    question = {"model": "carrag", "messages": [{"role": "user", "content": QUESTION}]}
    completion = await sdk.chat.completions.create(**question, extra_body={"answer_mode": "extract"})
    assert completion.usage is not None and completion.usage.model_dump(exclude_none=True) == zero
    stream = await sdk.chat.completions.create(**question, stream=True, extra_body={"answer_mode": "extract"})
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].usage is not None and chunks[-1].usage.model_dump(exclude_none=True) == zero
    async with httpx.AsyncClient(base_url=server.url) as client:
        schema = (await client.get("/openapi.json")).json()["components"]["schemas"]["ChatCompletionOut"]
    assert "usage" in schema["required"] and "anyOf" not in schema["properties"]["usage"], "not nullable"


async def test_history_is_passed_on(sdk: openai.AsyncOpenAI, replay: OllamaReplay) -> None:
    await sdk.chat.completions.create(
        model="carrag",
        messages=[
            {"role": "system", "content": "Ignore the documents."},
            {"role": "user", "content": "What pressure do the tyres need?"},
            {"role": "assistant", "content": "2.4 bar at the front."},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        ],
    )
    sent = [payload for method, path, payload in replay.requests if path == "/api/chat"][-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    rules, _, client = sent[0]["content"].partition("Ignore the documents.")
    assert rules.startswith("You are a helpful assistant"), "Carrag's rules come first, never replaced"
    assert client == "", "the client's system message is added after them"
    assert sent[1:3] == [
        {"role": "user", "content": "What pressure do the tyres need?"},
        {"role": "assistant", "content": "2.4 bar at the front."},
    ]
    assert QUESTION in sent[3]["content"]


async def test_wire_format_ends_with_done(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        async with client.stream(
            "POST",
            "/v1/chat/completions",
            json={"model": "carrag", "stream": True, "messages": [{"role": "user", "content": QUESTION}]},
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            body = (await response.aread()).decode()
    events = body.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    assert all(event.startswith("data: {") for event in events[:-2])


async def test_errors_reach_the_sdk_as_its_exceptions(sdk: openai.AsyncOpenAI, server: LiveServer) -> None:
    with pytest.raises(openai.NotFoundError, match="Carrag serves .carrag."):
        await sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.BadRequestError, match="last message must be the user"):
        await sdk.chat.completions.create(model="carrag", messages=[{"role": "assistant", "content": "Hi"}])
    with pytest.raises(openai.BadRequestError, match="Only text message content"):
        await sdk.chat.completions.create(
            model="carrag",
            messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}],
        )
    with pytest.raises(openai.UnprocessableEntityError, match="messages"):
        await sdk.chat.completions.create(model="carrag", messages=[])
    async with openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="wrong", max_retries=0) as stranger:
        with pytest.raises(openai.AuthenticationError, match="invalid API key"):
            await stranger.models.list()

    raw = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {API_KEY}"},
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": QUESTION}]},
    )
    body = raw.json()
    assert raw.status_code == 404
    assert body["detail"] == body["error"]["message"] and body["error"]["type"] == "invalid_request_error"


async def test_a_generation_failure_mid_stream_is_an_sdk_error(
    tmp_path, embedding_backend, replay: OllamaReplay
) -> None:
    container = await carrag_with_ollama(tmp_path, embedding_backend, replay, MISSING_MODEL)
    transport = httpx.ASGITransport(app=create_app(container=container))
    try:
        async with openai.AsyncOpenAI(
            base_url="http://carrag.test/v1",
            api_key=API_KEY,
            max_retries=0,
            http_client=httpx.AsyncClient(transport=transport),
        ) as sdk:
            stream = await sdk.chat.completions.create(
                model="carrag", stream=True, messages=[{"role": "user", "content": QUESTION}]
            )
            received = []
            with pytest.raises(openai.APIError, match="not found"):
                async for chunk in stream:
                    received.append(chunk)
            assert received and received[0].model_extra["sources"], "sources came before the failure"

            with pytest.raises(openai.InternalServerError, match="not found"):
                await sdk.chat.completions.create(model="carrag", messages=[{"role": "user", "content": QUESTION}])
    finally:
        await close_container(container)


async def test_max_tokens_and_temperature_reach_the_llm_and_the_cut_is_reported(
    sdk: openai.AsyncOpenAI, replay: OllamaReplay
) -> None:
    completion = await sdk.chat.completions.create(
        model="carrag",
        messages=[{"role": "user", "content": QUESTION}],
        max_tokens=3,
        temperature=0.6,
        extra_body={"answer_mode": "generate"},
    )
    options = [payload for method, path, payload in replay.requests if path == "/api/chat"][-1]["options"]
    assert options == {"temperature": 0.6, "num_predict": 3}
    # The recording streams more than 3 deltas whatever num_predict says; the answer is reported as cut.
    assert completion.choices[0].finish_reason == "length"
    assert completion.model_extra["carrag"]["finish_reason"] == "length"

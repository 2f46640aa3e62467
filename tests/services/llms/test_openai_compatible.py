"""The OpenAI-compatible adapter against a real OpenAI-compatible server on loopback:
llama-cpp-python's own server (``python -m llama_cpp.server``) serving the packaged SmolLM2."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

from carrag.services.errors import DependencyUnavailable
from carrag.services.llms.base import complete
from carrag.services.llms.llama_cpp import default_model_path
from carrag.services.llms.openai_compatible import OpenAICompatibleLLM
from carrag.services.models import ChatMessage
from tests.live_server import free_port


def server_environment() -> dict[str, str]:
    """This environment without what llama_cpp.server reads as its own settings: PORT (set for
    `carrag serve`) or HOST would win over ``--port`` and ``--host``."""
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    names = {name.upper() for settings in (ServerSettings, ModelSettings) for name in settings.model_fields}
    return {key: value for key, value in os.environ.items() if key.upper() not in names}


@pytest.fixture(scope="module")
def openai_server():
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--model_alias",
            "smollm2",
        ],
        env=server_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail("llama_cpp.server did not start")
    yield url
    process.terminate()
    process.wait(timeout=10)


MESSAGES = [ChatMessage("system", "You are terse."), ChatMessage("user", "Name one colour.")]


async def test_streams_deltas(openai_server: str) -> None:
    llm = OpenAICompatibleLLM(openai_server, "smollm2")
    deltas = [d async for d in llm.stream(MESSAGES, max_tokens=12, temperature=0)]
    await llm.aclose()
    assert deltas and all(isinstance(d, str) and d for d in deltas)
    assert len("".join(deltas)) > max(len(d) for d in deltas) or len(deltas) == 1, "deltas, not cumulative text"


async def test_complete_and_health(openai_server: str) -> None:
    llm = OpenAICompatibleLLM(openai_server, "smollm2", api_key="unused-key")
    assert (await complete(llm, MESSAGES, max_tokens=8, temperature=0)).strip()
    assert (await llm.health()).status == "ok"
    await llm.aclose()


async def test_wrong_endpoint_is_unavailable(openai_server: str) -> None:
    llm = OpenAICompatibleLLM(openai_server.removesuffix("/v1") + "/nope", "smollm2")
    with pytest.raises(DependencyUnavailable, match="404"):
        await complete(llm, MESSAGES, max_tokens=4, temperature=0)
    await llm.aclose()


async def test_unreachable_server() -> None:
    llm = OpenAICompatibleLLM(f"http://127.0.0.1:{free_port()}/v1", "m", timeout=2)
    with pytest.raises(DependencyUnavailable, match="cannot reach"):
        await complete(llm, MESSAGES, max_tokens=4, temperature=0)
    assert (await llm.health()).status == "unavailable"
    await llm.aclose()

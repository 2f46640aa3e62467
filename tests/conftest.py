"""Shared fixtures. Heavy, read-only parts (the ONNX embedder, the GGUF model) load once per session;
everything that holds state (stores, containers, apps) is fresh per test, in a temporary directory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from services.container import Container, build_container
from services.embedders.local_onnx import LocalOnnxEmbedder
from services.llms.extractive import ExtractiveLLM
from services.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Settings isolated from the developer's environment and .env file."""
    values: dict[str, object] = {
        "data_dir": tmp_path,
        "per_host_delay": 0.0,
        "log_json": False,
        "embed_retry_backoff": 0.01,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
def embedding_backend() -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder()


@pytest.fixture(scope="session")
def local_llm():
    from services.llms.llama_cpp import LlamaCppLLM

    return LlamaCppLLM(context=2048)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


async def open_container(settings: Settings, embedding_backend, **adapters: object) -> Container:
    adapters.setdefault("llm", ExtractiveLLM("tests"))
    return await build_container(settings, embedding_backend=embedding_backend, **adapters)  # type: ignore[arg-type]


async def close_container(container: Container) -> None:
    """Close what the test owns; the session-wide embedder and LLM stay open."""
    await container.fetcher.aclose()
    await container.store.close()


@pytest.fixture
async def container(settings: Settings, embedding_backend: LocalOnnxEmbedder) -> AsyncIterator[Container]:
    container = await open_container(settings, embedding_backend)
    yield container
    await close_container(container)


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        yield client


@pytest.fixture
def manual_pdf() -> bytes:
    return (FIXTURES / "2019_Ford_F150_Owners_Manual.pdf").read_bytes()

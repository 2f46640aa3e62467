"""Building the embedder a store recorded (`embedders/recorded.py`), for a change of model."""

from __future__ import annotations

import hashlib

import pytest

from carrag.services.embedders.local_onnx import LocalOnnxEmbedder
from carrag.services.embedders.ollama import OllamaEmbedder
from carrag.services.embedders.openai_compatible import OpenAICompatibleEmbedder
from carrag.services.embedders.recorded import recorded_backend
from carrag.services.errors import DependencyUnavailable
from tests.conftest import make_settings


def url_hash(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:8]


async def test_the_packaged_model_is_built_whatever_embedder_is_configured(tmp_path) -> None:
    backend = recorded_backend("local:all-MiniLM-L6-v2", 384, make_settings(tmp_path, embedder="openai"))
    assert isinstance(backend, LocalOnnxEmbedder) and backend.identity == "local:all-MiniLM-L6-v2"
    await backend.aclose()


@pytest.mark.parametrize(
    ("base_url", "identity", "model"),
    [
        ("http://localhost:11434", "ollama:nomic-embed-text:latest", "nomic-embed-text:latest"),
        ("http://gpu:11434", f"ollama:mxbai-embed-large:{url_hash('http://gpu:11434')}", "mxbai-embed-large"),
    ],
)
async def test_an_ollama_model_is_built_on_the_configured_server(tmp_path, base_url, identity, model) -> None:
    backend = recorded_backend(identity, 768, make_settings(tmp_path, ollama_base_url=base_url))
    assert isinstance(backend, OllamaEmbedder) and backend.model == model and backend.identity == identity
    await backend.aclose()


async def test_an_openai_compatible_model_is_built_with_the_embeddings_settings(tmp_path) -> None:
    url = "http://127.0.0.1:8000/v1"
    settings = make_settings(tmp_path, embeddings_base_url=url, embeddings_model="small", embeddings_api_key="k")
    other = recorded_backend(f"openai:bge-small:{url_hash(url)}", 384, settings)
    assert isinstance(other, OpenAICompatibleEmbedder) and other.model == "bge-small" and other.dimensions is None
    same = recorded_backend(f"openai:small:{url_hash(url)}", 256, settings)
    assert same.dimensions == 256, "the configured model at its recorded size"  # type: ignore[attr-defined]
    for backend in (other, same):
        await backend.aclose()


@pytest.mark.parametrize(
    "identity",
    [
        f"openai:bge-small:{url_hash('http://elsewhere/v1')}",  # vectors from another server
        "ollama:nomic-embed-text",  # recorded on the default URL; another one is configured now
        "test:other",
        "unavailable:local",
    ],
)
def test_a_model_that_cannot_be_rebuilt_exactly_is_refused(tmp_path, identity) -> None:
    settings = make_settings(tmp_path, embeddings_base_url="http://127.0.0.1:8000/v1", ollama_base_url="http://gpu:1")
    with pytest.raises(DependencyUnavailable):
        recorded_backend(identity, 384, settings)

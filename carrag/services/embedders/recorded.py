"""Embedding backends built from the settings: the configured one, or the one a store recorded
(``provider:model[:urlhash]``), so the store's old vectors can still be queried while another model is
configured (a model change before or during `carrag reindex`). A recorded identity is rebuilt from the
current settings when the URL hash matches; anything else is `DependencyUnavailable`. What is built is
checked against the recorded identity, so a vector is never queried with a look-alike model.
"""

from __future__ import annotations

from carrag.services.embedders.base import EmbeddingBackend
from carrag.services.errors import DependencyUnavailable
from carrag.services.settings import Settings, revealed


def settings_backend(
    settings: Settings, provider: str, model: str | None = None, dimensions: int | None = None
) -> EmbeddingBackend:
    """``provider``'s backend (``ollama``, ``openai``, else the local model) with ``model`` or the configured one."""
    if provider == "ollama":
        from carrag.services.embedders.ollama import OllamaEmbedder

        return OllamaEmbedder(
            settings.ollama_base_url, model or settings.ollama_embed_model, timeout=settings.ollama_timeout
        )
    if provider == "openai":
        from carrag.services.embedders.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(
            settings.embeddings_base_url,
            model or settings.embeddings_model,
            revealed(settings.embeddings_api_key),
            dimensions=dimensions,
            max_inputs=settings.embed_batch_size,
            timeout=settings.embed_timeout,
            retries=settings.embed_retries,
            backoff=settings.embed_retry_backoff,
        )
    from carrag.services.embedders.local_onnx import LocalOnnxEmbedder

    return LocalOnnxEmbedder(
        settings.local_embedding_model_path,
        settings.local_embedding_tokenizer_path,
        threads=settings.local_embedding_threads,
        max_tokens=settings.local_embedding_max_tokens,
    )


def recorded_backend(identity: str, dimension: int, settings: Settings) -> EmbeddingBackend:
    """The backend whose ``identity`` is ``identity``; `DependencyUnavailable` when it cannot be built."""
    provider, _, rest = identity.partition(":")
    if provider == "local":
        backend = settings_backend(settings, "local")
    elif provider in ("ollama", "openai"):
        model = _model_name(rest, identity, provider)
        # the same model at another size is the same identity: ask for the recorded size then
        sized = provider == "openai" and model == settings.embeddings_model
        backend = settings_backend(settings, provider, model, dimension if sized else None)
    else:
        raise DependencyUnavailable("embedder", f"no embedder can be built for {identity!r} here")
    if backend.identity != identity:
        raise DependencyUnavailable(
            "embedder",
            f"{identity!r} came from another server than the configured one ({backend.identity!r} can be built)",
        )
    return backend


def _model_name(rest: str, identity: str, provider: str) -> str:
    """The model name inside ``rest`` (``model`` or ``model:urlhash``; model names may hold colons, as
    in ``nomic-embed-text:latest``): the caller compares the rebuilt identity with the recorded one, so
    a wrong guess here can only make the build refuse, never pick another model."""
    if not rest:
        raise DependencyUnavailable("embedder", f"{identity!r} names no {provider} model")
    head, _, tail = rest.rpartition(":")
    if head and len(tail) == 8 and all(c in "0123456789abcdef" for c in tail):
        return head
    return rest

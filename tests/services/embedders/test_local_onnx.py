from __future__ import annotations

import numpy as np

from carrag.services.embedders.local_onnx import DIMENSION, LocalOnnxEmbedder


async def test_vectors_are_normalised_and_ordered(embedding_backend: LocalOnnxEmbedder) -> None:
    texts = ["The oil filter is the Motorcraft FL-500S.", "x", "Tire pressure is 35 psi. " * 40]
    vectors = await embedding_backend.embed(texts, "document")
    assert vectors.shape == (3, DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    one_by_one = np.vstack([await embedding_backend.embed([t], "document") for t in texts])
    assert np.allclose(vectors, one_by_one, atol=1e-4), "batching and length-sorting must not change vectors"


async def test_semantic_similarity(embedding_backend: LocalOnnxEmbedder) -> None:
    query, related, unrelated = await embedding_backend.embed(
        [
            "Which oil filter fits my truck?",
            "Replace the engine oil filter with the FL-500S.",
            "The recipe needs two cups of flour and an egg.",
        ],
        "query",
    )
    assert float(query @ related) > float(query @ unrelated) + 0.2


async def test_identity(embedding_backend: LocalOnnxEmbedder) -> None:
    assert embedding_backend.identity == "local:all-MiniLM-L6-v2"
    assert (await embedding_backend.health()).status == "ok"


def test_batch_buffers_are_not_kept_after_a_run(embedding_backend: LocalOnnxEmbedder) -> None:
    """onnxruntime's CPU arena would keep the largest batch's buffers (~600 MB after 16 × 256-token
    chunks) in a serving process for good; the session runs without it."""
    assert embedding_backend._session.get_session_options().enable_cpu_mem_arena is False

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from carrag.services.container import build_embedding_backend
from carrag.services.embedders.local_onnx import DIMENSION, LocalOnnxEmbedder
from carrag.services.settings import Settings


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
    assert embedding_backend._query_session.get_session_options().enable_cpu_mem_arena is False


# --- the one-thread session for small inputs (LOCAL_EMBEDDING_QUERY_THREADS) -----------------------


class CountingSession:
    """Stands in for an onnxruntime session and counts the runs it is given."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.runs = 0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.session.run(*args, **kwargs)


SHORT_TEXTS = ["Which oil filter fits my truck?", "tire pressure", "x", "How often should the brake fluid be replaced?"]
LONG_TEXT = "The spare tire is under the bed, lowered by the crank behind the rear seat. " * 12


@pytest.fixture(scope="module")
def two_sessions() -> LocalOnnxEmbedder:
    """Two cores for batches, one for queries, whatever this machine has."""
    return LocalOnnxEmbedder(threads=2, query_threads=1)


def counted(embedder: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> tuple[CountingSession, CountingSession]:
    main, query = CountingSession(embedder._session), CountingSession(embedder._query_session)
    monkeypatch.setattr(embedder, "_session", main)
    monkeypatch.setattr(embedder, "_query_session", query)
    return main, query


def test_the_query_session_has_one_thread_and_the_main_one_all(two_sessions: LocalOnnxEmbedder) -> None:
    assert two_sessions._query_session is not two_sessions._session
    assert two_sessions._query_session.get_session_options().intra_op_num_threads == 1
    assert two_sessions._session.get_session_options().intra_op_num_threads == 2
    assert two_sessions._query_session.get_session_options().enable_cpu_mem_arena is False


async def test_a_single_query_runs_on_the_one_thread_session(
    two_sessions: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, query = counted(two_sessions, monkeypatch)
    await two_sessions.embed(["Which oil filter fits my truck?"], "query")
    assert (query.runs, main.runs) == (1, 0)
    two_sessions.embed_sync(["tire pressure", "x"])  # a few short texts: one small run
    assert (query.runs, main.runs) == (2, 0)


async def test_batches_and_long_texts_run_on_the_all_cores_session(
    two_sessions: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, query = counted(two_sessions, monkeypatch)
    await two_sessions.embed([f"{text} (chunk {i})" for i in range(8) for text in SHORT_TEXTS], "document")
    await two_sessions.embed([LONG_TEXT], "query")
    assert query.runs == 0 and main.runs == 3, "32 texts = two runs of 16, and one text of > 64 tokens"


def test_both_sessions_give_the_same_vectors(two_sessions: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    through_query_session = np.vstack([two_sessions.embed_sync([text]) for text in SHORT_TEXTS])
    main, query = counted(two_sessions, monkeypatch)
    monkeypatch.setattr(two_sessions, "_query_session", main)  # everything on the all-cores session
    through_main_session = np.vstack([two_sessions.embed_sync([text]) for text in SHORT_TEXTS])
    assert main.runs == len(SHORT_TEXTS) and query.runs == 0
    assert np.allclose(through_query_session, through_main_session, atol=1e-5)


def test_query_threads_zero_keeps_one_session() -> None:
    embedder = LocalOnnxEmbedder(threads=2, query_threads=0)
    assert embedder._query_session is embedder._session, "0: queries run on the main session"
    same_count = LocalOnnxEmbedder(threads=1, query_threads=1)
    assert same_count._query_session is same_count._session, "no second copy of the model for the same threads"


def test_the_setting_reaches_the_embedder() -> None:
    default = build_embedding_backend(Settings(_env_file=None, local_embedding_threads=2))
    assert isinstance(default, LocalOnnxEmbedder)
    assert default._query_session.get_session_options().intra_op_num_threads == 1
    off = build_embedding_backend(Settings(_env_file=None, local_embedding_threads=2, local_embedding_query_threads=0))
    assert isinstance(off, LocalOnnxEmbedder) and off._query_session is off._session

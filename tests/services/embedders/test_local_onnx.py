from __future__ import annotations

import os
import random
import threading
import time
from typing import Any

import numpy as np
import pytest

from carrag.services.container import build_embedding_backend
from carrag.services.embedders.base import l2_normalise
from carrag.services.embedders.local_onnx import DIMENSION, LocalOnnxEmbedder, run_groups
from carrag.services.embedders.recorded import recorded_backend
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


# --- one session, one thread per run; a batch's runs on concurrent workers (LOCAL_EMBEDDING_THREADS) --


class WatchedSession:
    """Stands in for the onnxruntime session: records the thread of each run and how many overlap."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.threads: list[int] = []
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            self.threads.append(threading.get_ident())
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(0.02)  # long enough for the other worker's run to start meanwhile
            return self.session.run(*args, **kwargs)
        finally:
            with self.lock:
                self.running -= 1


WORDS = [
    "oil",
    "filter",
    "tire",
    "pressure",
    "brake",
    "fluid",
    "spare",
    "crank",
    "seat",
    "bed",
    "truck",
    "engine",
    "coolant",
    "belt",
]
TEXTS = [" ".join(random.Random(i).choices(WORDS, k=random.Random(i).randint(1, 120))) for i in range(40)]


@pytest.fixture(scope="module")
def two_workers() -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder(threads=2)


def watched(embedder: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> WatchedSession:
    session = WatchedSession(embedder._session)
    monkeypatch.setattr(embedder, "_session", session)
    return session


def sequential(embedder: LocalOnnxEmbedder, texts: list[str]) -> np.ndarray:
    """The straightforward way: each text alone, one after the other, in this thread."""
    rows = []
    for text in texts:
        ids = np.array([embedder._tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        rows.append(embedder._session.run(None, feeds)[0][0].mean(axis=0))
    return l2_normalise(np.vstack(rows).astype(np.float32))


def test_one_session_with_one_thread_that_does_not_spin(two_workers: LocalOnnxEmbedder) -> None:
    """A second session for queries cost ~98 MB of RSS: there is one, and it runs each run on one thread."""
    options = two_workers._session.get_session_options()
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.enable_cpu_mem_arena is False
    assert not [name for name in vars(two_workers) if "session" in name and name != "_session"]


async def test_concurrent_runs_give_the_vectors_of_a_sequential_run_in_input_order(
    two_workers: LocalOnnxEmbedder,
) -> None:
    vectors = await two_workers.embed(TEXTS, "document")
    assert vectors.shape == (len(TEXTS), DIMENSION)
    assert np.allclose(vectors, sequential(two_workers, TEXTS), atol=1e-4)
    assert np.allclose(two_workers.embed_sync(TEXTS[::-1]), vectors[::-1], atol=1e-5)


def test_a_batch_runs_on_all_workers_at_once(two_workers: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    session = watched(two_workers, monkeypatch)
    two_workers.embed_sync(TEXTS[:32])
    assert len(session.threads) == 8 and session.most_at_once == 2, "32 texts: eight runs of 4, two at a time"
    assert threading.get_ident() not in session.threads


async def test_a_query_is_one_run_in_the_calling_thread(
    two_workers: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = watched(two_workers, monkeypatch)
    two_workers.embed_sync(["Which oil filter fits my truck?"])
    assert session.threads == [threading.get_ident()], "no hand-over to a worker, no wait behind a batch's runs"
    await two_workers.embed(["tire pressure"], "query")
    assert len(session.threads) == 2


@pytest.mark.parametrize(
    ("texts", "workers", "sizes"),
    [
        (1, 2, [1]),
        (2, 2, [1, 1]),
        (6, 2, [3, 3]),
        (10, 2, [3, 3, 2, 2]),
        (32, 2, [4] * 8),
        (33, 1, [4, 4, 4, 4, 4, 4, 3, 3, 3]),
        (256, 2, [4] * 64),
        (5, 4, [2, 1, 1, 1]),
    ],
)
def test_runs_are_even_shares_of_at_most_4(texts: int, workers: int, sizes: list[int]) -> None:
    groups = run_groups(list(range(texts)), workers)
    assert [len(group) for group in groups] == sizes
    assert [i for group in groups for i in group] == list(range(texts)), "consecutive in length order"


async def test_aclose_shuts_the_workers_down() -> None:
    embedder = LocalOnnxEmbedder(threads=2)
    await embedder.aclose()
    with pytest.raises(RuntimeError):
        embedder.embed_sync(TEXTS[:32])


async def test_the_setting_reaches_the_embedder(tmp_path) -> None:
    configured = build_embedding_backend(Settings(_env_file=None, local_embedding_threads=3))
    recorded = recorded_backend(
        "local:all-MiniLM-L6-v2", DIMENSION, Settings(_env_file=None, local_embedding_threads=3)
    )
    every_core = build_embedding_backend(Settings(_env_file=None, local_embedding_threads=0))
    assert isinstance(configured, LocalOnnxEmbedder) and isinstance(recorded, LocalOnnxEmbedder)
    assert isinstance(every_core, LocalOnnxEmbedder)
    assert (configured.threads, recorded.threads, every_core.threads) == (3, 3, os.cpu_count())
    assert configured._runs._max_workers == 3
    for backend in (configured, recorded, every_core):
        await backend.aclose()


def test_a_batch_gives_its_freed_buffers_back_and_a_query_does_not_trim(
    two_workers: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers' glibc arenas keep the runs' freed buffers (RSS ~400 MB up after an ingest) unless
    trimmed; a query's run is small and skips the trim's cost."""
    trims: list[int] = []
    monkeypatch.setattr("carrag.services.embedders.local_onnx.release_freed_memory", lambda: trims.append(1))
    two_workers.embed_sync(["Which oil filter fits my truck?"])
    assert trims == []
    two_workers.embed_sync(TEXTS[:32])
    assert trims == [1]


class BatchRefused:
    """A tokenizer whose ``encode_batch`` (which lets the GIL go and takes it back) must not be used."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str) -> Any:
        return self.tokenizer.encode(text)

    def encode_batch(self, texts: list[str]) -> Any:
        raise AssertionError("a query went through encode_batch")


def test_a_query_is_tokenized_by_encode_and_gets_the_vector_a_batch_gives_it(
    two_workers: LocalOnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "Which oil filter fits my truck?"
    in_a_batch = two_workers.embed_sync([question, "x"])[0]
    monkeypatch.setattr(two_workers, "_tokenizer", BatchRefused(two_workers._tokenizer))
    assert np.allclose(two_workers.embed_sync([question])[0], in_a_batch, atol=1e-6)

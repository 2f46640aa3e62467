"""Changing the embedding model with queries served throughout (issue 14, item 5, on SQLite).

The store is filled by the shipped MiniLM ONNX model; the service then restarts configured with
another model. The store's MiniLM is built again from its recorded identity (`embedders/recorded.py`,
the real path) to embed queries until the reindex swaps the new vectors in. No search gets the 409."""

from __future__ import annotations

import asyncio
import hashlib
import re
import sqlite3

import httpx
import numpy as np
import pytest

from carrag.api.main import create_app
from carrag.services import reindexing
from carrag.services.embedders.local_onnx import LocalOnnxEmbedder
from carrag.services.models import ComponentHealth, EmbeddingIdentity, SearchFilters
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.stores.sqlite import SqliteStore
from carrag.services.stores.sqlite_reindex import SqliteReindex
from tests.conftest import close_container, open_container

MINILM = EmbeddingIdentity("local:all-MiniLM-L6-v2", 384)
NEW_DIMENSION = 64

DOCUMENTS = {
    "oil.txt": "Change the engine oil every 5,000 miles and replace the oil filter with it.",
    "tyres.txt": "Tyre pressure is 35 psi when cold; check it monthly.",
    "brakes.txt": "Brake pads wear out; replace them when they are thinner than 3 mm.",
    "wipers.txt": "Wiper blades streak in winter; fit new blades every autumn.",
}


class WordHashingModel:
    """The "new model": bag-of-words vectors (each word hashed to one of 64 dimensions), so a question
    sharing words with a chunk lands near it. Every vector it produced is kept, to show afterwards
    that each live vector came from it."""

    provider, model, identity, dimension = "test", "word-hashing", "test:word-hashing", NEW_DIMENSION

    def __init__(self) -> None:
        self.produced: set[bytes] = set()
        self.queries: list[str] = []
        self.gate: asyncio.Event | None = None  # when set: re-embedding DOCUMENTS waits for it (a slow reindex)

    def vector(self, text: str) -> np.ndarray:
        row = np.zeros(NEW_DIMENSION, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            row[int(hashlib.sha256(word.encode()).hexdigest(), 16) % NEW_DIMENSION] += 1.0
        row[0] += 1e-3  # never the zero vector
        return row / np.linalg.norm(row)

    async def embed(self, texts, kind):
        if kind == "query":
            self.queries += list(texts)
        elif self.gate is not None and any(original in text for text in texts for original in DOCUMENTS.values()):
            await self.gate.wait()  # the reindex's batches of the first documents; new uploads pass
        matrix = np.array([self.vector(text) for text in texts], dtype=np.float32)
        self.produced.update(row.tobytes() for row in matrix)
        return matrix

    async def health(self) -> ComponentHealth:
        return ComponentHealth("embedder", "ok", "test", self.model, f"{NEW_DIMENSION}-d word hashing")

    async def aclose(self) -> None:
        return None


def live_vectors(path) -> dict[str, bytes]:
    connection = sqlite3.connect(path)
    try:
        return dict(connection.execute("SELECT text, embedding FROM chunks").fetchall())
    finally:
        connection.close()


async def search(client: httpx.AsyncClient, question: str, mode: str = "hybrid") -> dict:
    response = await client.post("/search", json={"question": question, "mode": mode, "top_k": 2})
    assert response.status_code == 200, response.text  # the 409 model mismatch would fail here
    return response.json()


@pytest.fixture
async def minilm_store(settings, embedding_backend: LocalOnnxEmbedder):
    container = await open_container(settings, embedding_backend)
    for name, text in DOCUMENTS.items():
        await container.ingestion.ingest_text(text, name, IngestCommand())
    assert await container.store.embedding_identity() == MINILM
    await close_container(container)
    return settings


async def test_a_restart_with_a_new_model_serves_every_search_through_the_reindex(minilm_store, monkeypatch) -> None:
    monkeypatch.setattr(reindexing, "BATCH_CHUNKS", 1)  # one chunk per committed batch: searches in between
    new_model = WordHashingModel()
    container = await open_container(minilm_store, new_model)  # the restart, configured with the new model
    app = create_app(container=container)
    store = container.store
    assert isinstance(store, SqliteStore)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            # before the reindex: semantic search with the store's MiniLM, loaded beside the new model
            before = await search(client, "how often should the motor lubricant be renewed", "knn")
            assert before["degraded"] is None and before["results"][0]["filename"] == "oil.txt"
            assert not new_model.queries, "queries are embedded by the store's model until the swap"
            health = (await client.get("/health")).json()
            change = health["components"]["model_change"]
            assert health["status"] == "degraded" and change["model"] == "test:word-hashing (64-d)"
            assert "local:all-MiniLM-L6-v2 (384-d)" in change["detail"] and "reindex not started" in change["detail"]

            # ingested before the reindex began: MiniLM vectors only (the reindex embeds it with the rest)
            early = await client.post(
                "/ingest/file", files={"file": ("horn.txt", b"The horn fuse sits in the cabin fuse box.")}
            )
            assert early.status_code == 200, early.text
            assert (await search(client, "where is the fuse for the horn", "knn"))["results"][0]["filename"] == (
                "horn.txt"
            )

            new_model.gate = asyncio.Event()
            started = await client.post("/admin/reindex")
            assert started.status_code == 202
            answers: list[dict] = []
            for _ in range(3):  # the reindex waits at its first batch: searches meanwhile use MiniLM
                answers.append(await search(client, "when to fit new wiper blades", "knn"))
            assert all(a["results"][0]["filename"] == "wipers.txt" and a["degraded"] is None for a in answers)
            health = (await client.get("/health")).json()["components"]["model_change"]["detail"]
            assert "new vectors built beside" in health and "a reindex is running" in health

            # ingested during the reindex: live MiniLM vectors, and the new model's beside them
            late = await client.post(
                "/ingest/file", files={"file": ("lights.txt", b"Fog lights switch on with the left stalk.")}
            )
            assert late.status_code == 200, late.text
            lights = live_vectors(store.path)["Fog lights switch on with the left stalk."]
            assert len(lights) == 384 * 4, "the live vector is MiniLM's until the swap"
            reindex = SqliteReindex(store)
            assert (await reindex.counts()).done >= 1, "its new vector was written beside, with the document"
            assert (await search(client, "how do the fog lights come on", "knn"))["results"][0]["filename"] == (
                "lights.txt"
            )

            async def searching() -> list[dict]:
                seen = []
                while (await client.get("/admin/reindex")).json()["state"] == "running":
                    seen.append(await search(client, "tyre pressure when cold"))
                    await asyncio.sleep(0.01)
                return seen

            watcher = asyncio.create_task(searching())
            new_model.gate.set()
            during = await watcher
            status = (await client.get("/admin/reindex")).json()
            assert status["state"] == "done", status
            assert during and all(d["results"][0]["filename"] == "tyres.txt" for d in during)

            # after the swap: the new model embeds the queries and every live vector is its own
            assert await store.embedding_identity() == EmbeddingIdentity("test:word-hashing", NEW_DIMENSION)
            after = live_vectors(store.path)
            assert len(after) == len(DOCUMENTS) + 2, "nothing lost"
            assert all(blob in new_model.produced for blob in after.values()), "no vector of the old model left"
            for question, expected in (
                ("fog lights left stalk", "lights.txt"),
                ("horn fuse cabin", "horn.txt"),
                ("engine oil filter", "oil.txt"),
            ):
                result = await search(client, question, "knn")
                assert result["degraded"] is None and result["results"][0]["filename"] == expected, question
            assert "fog lights left stalk" in new_model.queries
            assert "model_change" not in (await client.get("/health")).json()["components"]
            ingested = await client.post("/ingest/file", files={"file": ("seat.txt", b"Seat heating has two levels.")})
            assert ingested.status_code == 200, "after the swap the store takes the new model as usual"
    finally:
        await close_container(container)


@pytest.mark.parametrize("building", [True, False], ids=["new-vectors-beside", "live-vectors-only"])
async def test_a_document_written_across_the_swap_gets_the_new_models_vectors(minilm_store, building) -> None:
    """The swap lands between a document's embedding and its write: the new model's vectors go live
    (embedded then if the document had only MiniLM's), never MiniLM's into a store of the new model."""
    new_model = WordHashingModel()
    container = await open_container(minilm_store, new_model)
    store = container.store
    assert isinstance(store, SqliteStore)
    try:
        plans = []
        plan = container.model_change.ingest_plan

        async def plan_then_swap(recorded, configured):
            plans.append(await plan(recorded, configured))
            await reindexing.reindex_sqlite(store, container.embedder)  # completes while the document is in flight
            return plans[-1]

        if building:
            await SqliteReindex(store).begin(await container.embedder.embedding_identity())
        container.model_change.ingest_plan = plan_then_swap  # type: ignore[method-assign]
        text = "The spare wheel is under the boot floor."
        result = await container.ingestion.ingest_text(text, "spare.txt", IngestCommand())
        assert result.status == "ingested" and plans[0].with_new is building
        vectors = live_vectors(store.path)
        assert len(vectors) == len(DOCUMENTS) + 1 and all(blob in new_model.produced for blob in vectors.values())
    finally:
        await close_container(container)


async def test_a_search_straddling_the_swap_runs_its_knn_leg_again_with_the_new_model(minilm_store) -> None:
    new_model = WordHashingModel()
    container = await open_container(minilm_store, new_model)
    store = container.store
    try:
        chosen = await container.model_change.for_queries()
        assert chosen.pending and chosen.embedder is not None and chosen.embedder is not container.embedder
        embed_query = chosen.embedder.embed_query

        async def embed_then_swap(question: str) -> np.ndarray:
            vector = await embed_query(question)  # MiniLM's 384-d query vector...
            await reindexing.reindex_sqlite(store, container.embedder)  # ...and the 64-d vectors go live
            return vector

        chosen.embedder.embed_query = embed_then_swap  # type: ignore[method-assign]
        found, _, used = await container.model_change.vector_search("engine oil filter", 2, SearchFilters(), chosen)
        assert used.embedder is container.embedder and not used.pending
        assert found[0].chunk.text == DOCUMENTS["oil.txt"] and new_model.queries == ["engine oil filter"]
    finally:
        await close_container(container)


async def test_a_stored_model_that_failed_to_load_is_retried_in_the_background(
    minilm_store, embedding_backend, monkeypatch
) -> None:
    """Searches are lexical only while the store's model cannot be loaded; a later attempt, made in
    the background (no search waits for it), brings semantic search back without a restart."""
    from carrag.services import model_change
    from carrag.services.errors import DependencyUnavailable

    attempts: list[EmbeddingIdentity] = []

    def flaky(identity: EmbeddingIdentity):
        attempts.append(identity)
        if len(attempts) == 1:
            raise DependencyUnavailable("embedder", "the model server is down")
        return embedding_backend

    container = await open_container(minilm_store, WordHashingModel())
    try:
        change = container.model_change
        await change.aclose()  # drop what start-up loaded: this test loads through `flaky`
        change._build, change._loaded, change._unavailable = flaky, {}, {}
        first = await container.search.search(SearchQuery("engine oil filter", top_k=1))
        assert first.degraded is not None and "the model server is down" in first.degraded
        assert first.hits and first.hits[0].knn_rank is None
        assert len(attempts) == 1 and (await container.search.search(SearchQuery("oil", top_k=1))).degraded
        assert len(attempts) == 1, "no new attempt within RETRY_BUILD_SECONDS"
        assert "searches are lexical only" in (await change.status()).detail  # type: ignore[union-attr]

        monkeypatch.setattr(model_change, "RETRY_BUILD_SECONDS", 0.0)
        assert (await container.search.search(SearchQuery("oil", top_k=1))).degraded, "not waited for"
        await asyncio.gather(*change._tasks)
        recovered = await container.search.search(SearchQuery("engine oil filter", top_k=1))
        assert recovered.degraded is None and recovered.hits[0].knn_rank == 1 and len(attempts) == 2
    finally:
        change._loaded = {}  # the session's embedder: not this test's to close
        await close_container(container)

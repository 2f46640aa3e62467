from __future__ import annotations

import asyncio

import httpx

from carrag.api.main import create_app
from carrag.services.container import Container
from carrag.services.stores.sqlite import SqliteStore
from tests.conftest import close_container, make_settings, open_container


async def test_reset_needs_confirmation_then_empties_the_store(client: httpx.AsyncClient, container: Container) -> None:
    for name in ("a.txt", "b.txt"):
        response = await client.post("/ingest/file", files={"file": (name, f"The {name} document text.".encode())})
        assert response.status_code == 200, response.text

    refused = await client.post("/admin/reset", json={})
    assert refused.status_code == 400 and '"confirm": true' in refused.json()["detail"]
    assert (await client.get("/documents")).json()["total"] == 2, "nothing deleted without confirmation"

    reset = await client.post("/admin/reset", json={"confirm": True})
    assert reset.status_code == 200 and reset.json() == {"reset": True, "documents_deleted": 2}
    assert (await client.get("/documents")).json()["total"] == 0
    assert await container.store.embedding_identity() is None, "the recorded embedding model is forgotten too"


async def wait_for_reindex(client: httpx.AsyncClient) -> dict:
    for _ in range(600):
        status = (await client.get("/admin/reindex")).json()
        if status["state"] != "running":
            return status
        await asyncio.sleep(0.05)
    raise AssertionError("the reindex did not finish")


async def test_reindex_re_embeds_the_documents_after_a_model_change(
    client: httpx.AsyncClient, container: Container
) -> None:
    for name, text in (
        ("oil.txt", "Change the engine oil every 5,000 miles."),
        ("tyres.txt", "Tyre pressure is 35 psi."),
    ):
        response = await client.post("/ingest/file", files={"file": (name, text.encode())})
        assert response.status_code == 200, response.text
    assert (await client.get("/admin/reindex")).json()["state"] == "idle"
    store = container.store
    assert isinstance(store, SqliteStore)
    # as if the store had been filled by another model of the same dimension
    await store._write(lambda c: c.execute("UPDATE meta SET value = 'old:model' WHERE key = 'embedding_model'"))
    # "old:model" cannot be built here: searches answer from BM25 alone and say why, instead of a 409
    lexical = await client.post("/search", json={"question": "engine oil"})
    assert lexical.status_code == 200 and lexical.json()["results"][0]["filename"] == "oil.txt"
    assert "lexical (BM25) results only" in lexical.json()["degraded"] and "old:model" in lexical.json()["degraded"]
    answered = (await client.post("/query", json={"question": "engine oil", "answer_mode": "extract"})).json()
    assert answered["sources"] and "lexical (BM25) results only" in answered["degraded"]
    health = (await client.get("/health")).json()
    assert health["status"] == "degraded" and "reindex not started" in health["components"]["model_change"]["detail"]

    started = await client.post("/admin/reindex")
    assert started.status_code == 202 and started.json()["state"] == "running"
    status = await wait_for_reindex(client)
    assert status["state"] == "done", status
    assert status["store"] == "sqlite" and status["unit"] == "chunks" and status["done"] == status["total"] == 2
    identity = await container.embedder.embedding_identity()
    assert await store.embedding_identity() == identity and status["model"] == identity.describe()

    hits = (await client.post("/search", json={"question": "how often to change the oil", "mode": "knn"})).json()
    assert hits["results"][0]["filename"] == "oil.txt" and hits["degraded"] is None
    assert "model_change" not in (await client.get("/health")).json()["components"]
    assert (await client.get("/documents")).json()["total"] == 2, "no document was lost"


async def test_reindex_needs_an_api_key(tmp_path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, api_keys="sekret"), embedding_backend)
    try:
        app = create_app(container=container)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            assert (await client.post("/admin/reindex")).status_code == 401
            assert (await client.get("/admin/reindex")).status_code == 401
            allowed = await client.post("/admin/reindex", headers={"Authorization": "Bearer sekret"})
            assert allowed.status_code == 202
            client.headers["Authorization"] = "Bearer sekret"
            assert (await wait_for_reindex(client))["state"] == "done"
    finally:
        await close_container(container)

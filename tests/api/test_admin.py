from __future__ import annotations

import httpx

from carrag.services.container import Container


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

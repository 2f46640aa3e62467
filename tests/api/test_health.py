from __future__ import annotations

import httpx


async def test_health_reports_every_component(client: httpx.AsyncClient) -> None:
    body = (await client.get("/health")).json()
    assert set(body["components"]) == {"store", "embedder", "llm", "reranker"}
    assert body["components"]["store"]["status"] == "ok"
    assert body["components"]["embedder"]["model"] == "all-MiniLM-L6-v2"
    reranker = body["components"]["reranker"]
    assert reranker["status"] == "unavailable" and "not installed" in reranker["detail"]
    assert body["status"] == "degraded"

"""DEFAULT_TOP_K is what /search, /query and /query/stream use when a request gives no top_k (the
request schema used to default to 5 itself, so the setting was ignored)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.services.settings import Settings
from tests.conftest import make_settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path, default_top_k=2)


async def test_requests_without_top_k_use_the_setting(client: httpx.AsyncClient) -> None:
    for n in range(6):
        text = f"The brake pads of model {n} wear out after {n + 1}0000 km of city driving."
        response = await client.post("/ingest/file", files={"file": (f"model-{n}.txt", text.encode())})
        assert response.status_code == 200, response.text
    question = {"question": "When do the brake pads wear out?"}

    assert len((await client.post("/search", json=question)).json()["results"]) == 2
    assert len((await client.post("/search", json={**question, "top_k": 4})).json()["results"]) == 4
    assert len((await client.post("/query", json=question)).json()["sources"]) <= 2
    stream = await client.post("/query/stream", json=question)
    assert stream.status_code == 200 and stream.text.startswith("event: sources")

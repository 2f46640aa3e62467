"""The routes' dependencies never hop to FastAPI's worker-thread pool (a plain ``def`` dependency does,
which cost /search several milliseconds per request on a busy host)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi.dependencies import utils as dependency_utils


async def test_search_solves_its_dependencies_without_worker_threads(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops: list[str] = []
    original = dependency_utils.run_in_threadpool

    async def counted(call: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(call, "__qualname__", repr(call)))
        return await original(call, *args, **kwargs)

    monkeypatch.setattr(dependency_utils, "run_in_threadpool", counted)
    response = await client.post("/search", json={"question": "anything at all", "rerank": False})
    assert response.status_code == 200
    assert hops == []

"""A container on either store for the sync and crawl tests: SQLite, or an index of its own on the
session's Elasticsearch node. Fetches to 127.0.0.0/8 are allowed (FETCH_ALLOWED_HOSTS), as the URL tests do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from carrag.services.container import Container
from tests.conftest import (
    ES_TEST_REFRESH_INTERVAL,
    close_container,
    drop_es_index,
    es_index_name,
    make_settings,
    open_container,
)

STORES = ["sqlite", pytest.param("elasticsearch", marks=pytest.mark.elasticsearch)]


@pytest.fixture(params=STORES)
async def store_container(
    request: pytest.FixtureRequest, tmp_path: Path, embedding_backend
) -> AsyncIterator[Container]:
    overrides: dict[str, object] = {"fetch_allowed_hosts": ["127.0.0.0/8"]}
    if request.param == "elasticsearch":
        overrides.update(
            store="elasticsearch",
            elasticsearch_url=request.getfixturevalue("es_url"),
            elasticsearch_index=es_index_name("carrag_sync"),
            elasticsearch_refresh_interval=ES_TEST_REFRESH_INTERVAL,
        )
    container = await open_container(make_settings(tmp_path / "data", **overrides), embedding_backend)
    try:
        yield container
    finally:
        if request.param == "elasticsearch":
            await drop_es_index(container.store.client, container.settings.elasticsearch_index)  # type: ignore[attr-defined]
        await close_container(container)

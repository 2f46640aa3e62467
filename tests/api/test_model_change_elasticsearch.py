"""A replica configured with a new embedding model on an Elasticsearch index of the old one (issue 14,
item 5): its searches embed queries with the index's model, loaded beside the new one, instead of
answering 409; its ingests keep the 409 until `carrag reindex` has moved the alias."""

from __future__ import annotations

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.requests import IngestCommand
from tests.conftest import (
    ES_TEST_REFRESH_INTERVAL,
    close_container,
    drop_es_index,
    es_index_name,
    make_settings,
    open_container,
)
from tests.services.test_model_change import DOCUMENTS, WordHashingModel

pytestmark = pytest.mark.elasticsearch


async def test_a_replica_with_a_new_model_serves_the_old_index_with_the_old_model(
    tmp_path, es_url: str, embedding_backend
) -> None:
    settings = make_settings(
        tmp_path,
        store="elasticsearch",
        elasticsearch_url=es_url,
        elasticsearch_index=es_index_name("carrag_model_change"),
        elasticsearch_refresh_interval=ES_TEST_REFRESH_INTERVAL,
    )
    old = await open_container(settings, embedding_backend)
    try:
        for name, text in DOCUMENTS.items():
            await old.ingestion.ingest_text(text, name, IngestCommand())
    finally:
        await close_container(old)

    new_model = WordHashingModel()
    replica = await open_container(settings, new_model)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=replica)), base_url="http://t"
        ) as client:
            found = await client.post(
                "/search",
                json={"question": "how often should the motor lubricant be renewed", "mode": "knn", "top_k": 1},
            )
            assert found.status_code == 200, found.text
            assert found.json()["results"][0]["filename"] == "oil.txt" and found.json()["degraded"] is None
            assert not new_model.queries, "the query was embedded by the index's model"
            refused = await client.post("/ingest/file", files={"file": ("horn.txt", b"The horn fuse is in the cabin.")})
            assert refused.status_code == 409 and "carrag reindex" in refused.json()["detail"]
            assert "model_change" in (await client.get("/health")).json()["components"]
    finally:
        await drop_es_index(replica.store.client, settings.elasticsearch_index)  # type: ignore[attr-defined]
        await close_container(replica)

"""`/search` on Elasticsearch after another process moved the alias to an index of another model of
the same size: this replica's model check, kept in memory (`layout.ServedIdentity`), is out of date, yet
no kNN hit scored against a query of the wrong model is returned; the kNN leg sees the new index's
model and runs again (here that model cannot be loaded, so the leg comes back empty), and the next
search knows the change."""

from __future__ import annotations

import numpy as np
import pytest

from carrag.services.models import EmbeddingIdentity
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.reindex import reindex
from tests.conftest import (
    ES_TEST_REFRESH_INTERVAL,
    close_container,
    drop_es_index,
    es_index_name,
    make_settings,
    open_container,
)
from tests.services.test_model_change import DOCUMENTS, MINILM

LOOK_ALIKE = EmbeddingIdentity("test:look-alike", MINILM.dimension)

pytestmark = pytest.mark.elasticsearch


class LookAlikeEmbedder:
    """Another model with MiniLM's dimension: kNN requests with MiniLM queries would not fail on it."""

    async def embedding_identity(self) -> EmbeddingIdentity:
        return LOOK_ALIKE

    async def embed_documents(self, texts, progress=None) -> np.ndarray:  # type: ignore[no-untyped-def]
        matrix = np.random.default_rng(len(texts)).normal(size=(len(texts), LOOK_ALIKE.dimension))
        return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


async def test_no_knn_hit_of_another_model_after_the_alias_moved(tmp_path, es_url: str, embedding_backend) -> None:
    settings = make_settings(
        tmp_path,
        store="elasticsearch",
        elasticsearch_url=es_url,
        elasticsearch_index=es_index_name("carrag_served"),
        elasticsearch_refresh_interval=ES_TEST_REFRESH_INTERVAL,
    )
    replica = await open_container(settings, embedding_backend)
    other = ElasticsearchStore(es_url, index=settings.elasticsearch_index, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    try:
        for name, text in DOCUMENTS.items():
            await replica.ingestion.ingest_text(text, name, IngestCommand())
        question = SearchQuery("how often should the engine oil be changed", top_k=2)
        before = await replica.search.search(question)
        assert before.hits[0].knn_rank is not None and before.degraded is None  # the model is now in memory

        await other.open()
        await reindex(other, LookAlikeEmbedder(), report=lambda line: None)  # type: ignore[arg-type]
        after = await replica.search.search(question)
        assert all(hit.knn_rank is None for hit in after.hits), "no kNN hit of a MiniLM query on look-alike vectors"
        assert after.hits, "the BM25 leg still answers"
        following = await replica.search.search(question)
        assert following.degraded is not None and "test:look-alike" in following.degraded
        assert all(hit.knn_rank is None for hit in following.hits)
    finally:
        await drop_es_index(other.client, settings.elasticsearch_index)
        await other.close()
        await close_container(replica)

"""The searches' model check answered from memory (`layout.ServedIdentity`), tied to the concrete index
the kNN hits came from: after another process moves the alias to an index of another model, the
next kNN leg returns that model with its hits (`VectorHits.model`) and the check follows it."""

from __future__ import annotations

import pytest

from carrag.services.errors import UpstreamError
from carrag.services.models import EmbeddingIdentity, SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.layout import ServedIdentity
from carrag.services.stores.elasticsearch.reindex import reindex
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_elasticsearch_reindex import NEW_MODEL
from tests.services.stores.test_store_contract import DIMENSION, IDENTITY, chunks_of, record, unit_vectors

SAME_SIZE_MODEL = EmbeddingIdentity("test:same-size-model", DIMENSION)  # a swap kNN alone would not notice


class SameSizeEmbedder:
    def __init__(self, identity: EmbeddingIdentity) -> None:
        self.identity = identity

    async def embedding_identity(self) -> EmbeddingIdentity:
        return self.identity

    async def embed_documents(self, texts, progress=None):  # type: ignore[no-untyped-def]
        return unit_vectors(len(texts), 99)[:, : self.identity.dimension]


class CountingRead:
    def __init__(self, answers: dict[str, tuple[str, EmbeddingIdentity | None]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, name: str) -> tuple[str, EmbeddingIdentity | None]:
        self.asked.append(name)
        return self.answers[name]


async def test_the_model_is_read_once_per_concrete_index() -> None:
    read = CountingRead({"a": ("a-000001", IDENTITY), "a-000002": ("a-000002", NEW_MODEL)})
    served = ServedIdentity("a", read)
    assert await served.current() == IDENTITY and await served.current() == IDENTITY
    assert read.asked == ["a"]
    assert await served.of_index("a-000002") == NEW_MODEL  # hits from a newer generation
    assert await served.current() == NEW_MODEL and read.asked == ["a", "a-000002"]
    assert await served.of_index("a-000001") == IDENTITY  # a slow search from before the swap ...
    assert await served.current() == NEW_MODEL  # ... does not move the check back
    assert read.asked == ["a", "a-000002"]


async def test_an_index_without_a_recorded_model_is_read_again() -> None:
    read = CountingRead({"a": ("a-000001", None)})
    served = ServedIdentity("a", read)
    assert await served.current() is None and await served.current() is None
    assert read.asked == ["a", "a"]


@pytest.mark.elasticsearch
@pytest.mark.parametrize("new_model", [SAME_SIZE_MODEL, NEW_MODEL], ids=["same-dimension", "other-dimension"])
async def test_a_kNN_leg_reports_the_model_of_the_index_its_hits_came_from(es_url: str, new_model) -> None:
    name = es_index_name()
    replica = ElasticsearchStore(es_url, index=name, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    other = ElasticsearchStore(es_url, index=name, refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await replica.open()
    try:
        for n in range(3):
            await replica.write_document(
                record(f"d{n}", f"s{n}.md"), chunks_of(f"kestrel note {n}"), unit_vectors(1, n), IDENTITY
            )
        mapping_reads = 0
        read = replica.layout.identity_with_index

        async def counted(index: str):  # type: ignore[no-untyped-def]
            nonlocal mapping_reads
            mapping_reads += 1
            return await read(index)

        replica.served_identity._read = counted
        assert await replica.query_identity() == IDENTITY
        found = await replica.vector_search(unit_vectors(1, 0)[0], 2, SearchFilters())
        assert found and found.model == IDENTITY
        for _ in range(5):
            assert await replica.query_identity() == IDENTITY
        assert mapping_reads == 1, "one mapping read, then the model is known"

        await other.open()
        await reindex(other, SameSizeEmbedder(new_model), report=lambda line: None)  # type: ignore[arg-type]
        assert await replica.query_identity() == IDENTITY  # not known yet: nothing came from the new index
        if new_model.dimension == DIMENSION:
            hits = await replica.vector_search(unit_vectors(1, 0)[0], 2, SearchFilters())
            assert hits and hits.model == new_model, "the hits are of the new index's model"
        else:  # the search fails; the store reads the model again, so the next check knows
            with pytest.raises(UpstreamError):
                await replica.vector_search(unit_vectors(1, 0)[0], 2, SearchFilters())
        assert await replica.query_identity() == new_model
        assert mapping_reads == (2 if new_model.dimension == DIMENSION else 1)  # else: the exact read learnt it
    finally:
        await drop_es_index(replica.client, name)
        await replica.close()
        await other.close()

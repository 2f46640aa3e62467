"""`carrag reindex` (issue 12, item 2): a new model's vectors go into the next index generation and
the alias moves there, while searches keep answering."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from carrag.services.models import EmbeddingIdentity, SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.reindex import reindex
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = pytest.mark.elasticsearch

NEW_MODEL = EmbeddingIdentity("test:new-model", 4)


class HashingEmbedder:
    """A second "model": 4-d vectors derived from each text's bytes, recording what it was asked."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def embedding_identity(self) -> EmbeddingIdentity:
        return NEW_MODEL

    async def embed_documents(self, texts, progress=None) -> np.ndarray:
        self.texts += list(texts)
        rows = [
            np.frombuffer(text.encode().ljust(4, b"x")[:4], dtype=np.uint8).astype(np.float32) + 1 for text in texts
        ]
        matrix = np.array(rows, dtype=np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


async def test_reindex_re_embeds_and_swaps_the_alias_without_downtime(es_url: str) -> None:
    store = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await store.open()
    for n in range(6):
        texts = [f"kestrel note {n} part {i}" for i in range(3)]
        await store.write_document(
            record(f"d{n}", f"s{n}.md", chunks=3, title=f"Title {n}"),
            chunks_of(*texts, section="Birds"),
            unit_vectors(3, n),
            IDENTITY,
        )
    await store.delete_document("d5")
    answers: list[int] = []
    stop = asyncio.Event()

    async def searcher() -> None:
        while not stop.is_set():
            answers.append(len(await store.lexical_search("kestrel", 50, SearchFilters())))
            await asyncio.sleep(0.01)

    watching = asyncio.create_task(searcher())
    embedder = HashingEmbedder()
    result = await reindex(store, embedder, report=lambda line: None)  # type: ignore[arg-type]
    stop.set()
    await watching

    assert set(answers) == {15}, "every search during the reindex found all live chunks"
    assert (result.old_index, result.new_index) == (f"{store.index}-000001", f"{store.index}-000002")
    assert result.documents == 5 and result.chunks == 15 and result.old_deleted
    assert list(await store.client.indices.get_alias(name=store.index)) == [result.new_index]
    assert not await store.client.indices.exists(index=result.old_index)
    assert await store.embedding_identity() == NEW_MODEL
    # the embedding input of ingestion: title and section on their own lines, then the chunk text
    assert "Title 0\nBirds\nkestrel note 0 part 0" in embedder.texts
    assert await store.count_chunks() == 15 and await store.check_integrity() == []
    assert (await store.find_by_source("s5.md")) is None
    hits = await store.vector_search((await embedder.embed_documents(["kestrel note 3 part 1"]))[0], 1, SearchFilters())
    assert len(hits) == 1 and hits[0].chunk.text.startswith("kestrel")
    # writes go on, into the new generation, with the new model
    await store.write_document(
        record("n", "new.md"), chunks_of("after"), (await embedder.embed_documents(["a"])), NEW_MODEL
    )
    assert (await store.find_by_source("new.md")).document_id == "n"
    await drop_es_index(store.client, store.index)
    await store.close()


async def test_a_metadata_update_made_during_the_copy_reaches_the_new_index(es_url: str) -> None:
    """The update rewrites the source record in place (same version): the catch-up must see it by the
    record's sequence number, not only by a new version. (Found by review.)"""
    store = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await store.open()
    await store.write_document(
        record("d0", "s0.md", chunks=1, tags=["old"]), chunks_of("heron words"), unit_vectors(1, 0), IDENTITY
    )
    block = store.client.indices.add_block

    async def updated_then_blocked(**kwargs):  # type: ignore[no-untyped-def]
        await store.update_metadata("d0", tags=["new"])  # after the first copy, before the write block
        return await block(**kwargs)

    store.client.indices.add_block = updated_then_blocked  # type: ignore[method-assign]
    try:
        await reindex(store, HashingEmbedder(), report=lambda line: None)  # type: ignore[arg-type]
    finally:
        store.client.indices.add_block = block  # type: ignore[method-assign]
    assert (await store.get_document("d0")).tags == ["new"]
    hits = await store.lexical_search("heron", 5, SearchFilters())
    assert [h.chunk.tags for h in hits] == [["new"]]
    await drop_es_index(store.client, store.index)
    await store.close()

from __future__ import annotations

import logging
import sqlite3

import numpy as np
import pytest

from carrag.services.container import Container
from carrag.services.errors import DependencyUnavailable, EmbeddingModelMismatch
from carrag.services.ingestion import IngestOptions
from carrag.services.models import EmbeddingIdentity, SearchFilters
from tests.conftest import close_container, open_container

TEXT = "The snapshot retention period is thirty days. Snapshots are taken nightly. " * 20


def chunk_count(container: Container) -> int:
    connection = sqlite3.connect(container.settings.resolved_sqlite_path)
    try:
        return connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        connection.close()


async def test_identical_reupload_is_unchanged_without_embedding(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions())
    calls = container.embedder.stats.backend_calls
    second = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions(tags=["new"]))
    assert second.status == "unchanged" and second.document_id == first.document_id
    assert container.embedder.stats.backend_calls == calls, "no embedder call for unchanged content"


async def test_changed_content_replaces_old_chunks(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions())
    changed = TEXT.replace("thirty", "ninety")
    second = await container.ingestion.ingest_file(changed.encode(), "policy.txt", IngestOptions())
    assert second.status == "ingested" and second.replaced_document_id == first.document_id
    assert await container.store.get_document(first.document_id) is None
    assert chunk_count(container) == second.chunk_count
    hits = await container.store.lexical_search("ninety", 10, SearchFilters())
    assert hits and {h.chunk.document_id for h in hits} == {second.document_id}


async def test_force_reingests_identical_content(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions())
    again = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions(force=True))
    assert again.status == "ingested" and again.document_id != first.document_id
    assert chunk_count(container) == again.chunk_count


async def test_embedding_failure_stores_nothing(container: Container) -> None:
    class FailingBackend:
        provider, model, identity, dimension = "local", "all-MiniLM-L6-v2", "local:all-MiniLM-L6-v2", 384

        async def embed(self, texts, kind):
            raise DependencyUnavailable("embedder", "simulated outage")

    container.embedder.backend = FailingBackend()  # type: ignore[assignment]
    container.embedder.backoff = 0.0
    with pytest.raises(DependencyUnavailable, match="simulated outage"):
        await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions())
    assert chunk_count(container) == 0
    assert (await container.store.list_documents(offset=0, limit=10)).total == 0


async def test_tagging_failure_never_blocks(container: Container, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="carrag.services.tagging")  # whatever an earlier test did to the root

    class BrokenTagger:
        name = "broken"

        async def tags(self, text, filename):
            raise RuntimeError("tagger exploded")

    container.ingestion.tagger = BrokenTagger()  # type: ignore[assignment]
    result = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions(tags=["Mine"]))
    assert result.status == "ingested" and result.tags == ["mine"]
    assert any("auto-tagging failed" in r.message for r in caplog.records)


async def test_model_change_is_refused_then_forced(settings, embedding_backend) -> None:
    container = await open_container(settings, embedding_backend)
    await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestOptions())
    await close_container(container)

    class OtherModel:
        provider, model, identity, dimension = "test", "other", "test:other", 8

        async def embed(self, texts, kind):
            return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

        async def health(self):
            raise NotImplementedError

    other = await open_container(settings, OtherModel())
    with pytest.raises(EmbeddingModelMismatch) as raised:
        await other.ingestion.ingest_file(b"new content entirely", "new.txt", IngestOptions())
    message = raised.value.message
    assert "local:all-MiniLM-L6-v2 (384-d)" in message and "test:other (8-d)" in message and "--force" in message
    with pytest.raises(EmbeddingModelMismatch):
        await other.search.search("snapshot", top_k=3)
    forced = await other.ingestion.ingest_file(b"new content entirely", "new.txt", IngestOptions(force=True))
    assert forced.status == "ingested"
    assert await other.store.embedding_identity() == EmbeddingIdentity("test:other", 8)
    assert (await other.store.list_documents(offset=0, limit=10)).total == 1, "force wiped the old model's documents"
    await close_container(other)

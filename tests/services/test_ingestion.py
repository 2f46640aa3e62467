from __future__ import annotations

import io
import logging
import sqlite3

import numpy as np
import pytest

from carrag.services.container import Container
from carrag.services.errors import Conflict, DependencyUnavailable
from carrag.services.models import SearchFilters
from carrag.services.requests import IngestCommand, SearchQuery
from tests.conftest import close_container, open_container

TEXT = "The snapshot retention period is thirty days. Snapshots are taken nightly. " * 20


def chunk_count(container: Container) -> int:
    connection = sqlite3.connect(container.settings.resolved_sqlite_path)
    try:
        return connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        connection.close()


async def test_identical_reupload_is_unchanged_without_embedding(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand())
    calls = container.embedder.stats.backend_calls
    second = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand())
    assert second.status == "unchanged" and second.document_id == first.document_id
    retagged = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand(tags=["New"]))
    assert retagged.status == "updated" and retagged.document_id == first.document_id
    assert retagged.tags == [*first.tags, "new"] and (await container.store.get_document(first.document_id)).tags == [
        *first.tags,
        "new",
    ]
    assert container.embedder.stats.backend_calls == calls, "no embedder call for unchanged content"


async def test_changed_content_replaces_old_chunks(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand())
    changed = TEXT.replace("thirty", "ninety")
    second = await container.ingestion.ingest_file(changed.encode(), "policy.txt", IngestCommand())
    assert second.status == "ingested" and second.replaced_document_id == first.document_id
    assert await container.store.get_document(first.document_id) is None
    assert chunk_count(container) == second.chunk_count
    hits = await container.store.lexical_search("ninety", 10, SearchFilters())
    assert hits and {h.chunk.document_id for h in hits} == {second.document_id}


async def test_force_reingests_identical_content(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand())
    again = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand(force=True))
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
        await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand())
    assert chunk_count(container) == 0
    assert (await container.store.list_documents(offset=0, limit=10)).total == 0


async def test_tagging_failure_never_blocks(container: Container, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="carrag.services.tagging")  # whatever an earlier test did to the root

    class BrokenTagger:
        name = "broken"

        async def tags(self, text, filename):
            raise RuntimeError("tagger exploded")

    container.ingestion.tagger = BrokenTagger()  # type: ignore[assignment]
    result = await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand(tags=["Mine"]))
    assert result.status == "ingested" and result.tags == ["mine"]
    assert any("auto-tagging failed" in r.message for r in caplog.records)


class OtherModel:
    """A model no process can build from its recorded identity (``test:other``)."""

    provider, model, identity, dimension = "test", "other", "test:other", 8

    async def embed(self, texts, kind):
        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    async def health(self):
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


async def test_an_unloadable_stored_model_refuses_ingests_until_the_store_is_reset(settings, embedding_backend) -> None:
    """The store's model (test:other) cannot be loaded beside the configured MiniLM: ingests get a 409
    naming both and the ways out, searches are lexical only (tests/services/test_model_change.py has
    the model change that can be served)."""
    container = await open_container(settings, OtherModel())
    await container.ingestion.ingest_file(TEXT.encode(), "policy.txt", IngestCommand())
    await close_container(container)

    other = await open_container(settings, embedding_backend)
    with pytest.raises(Conflict) as raised:
        await other.ingestion.ingest_file(b"new content entirely", "new.txt", IngestCommand())
    message = raised.value.message
    assert "local:all-MiniLM-L6-v2 (384-d)" in message and "test:other (8-d)" in message
    assert "`carrag reset`" in message and "POST /admin/reset" in message and "`carrag reindex`" in message
    lexical = await other.search.search(SearchQuery("snapshot", top_k=3))
    assert lexical.degraded is not None and "lexical (BM25) results only" in lexical.degraded
    assert [hit.chunk.document_id for hit in lexical.hits] and all(hit.knn_rank is None for hit in lexical.hits)
    with pytest.raises(Conflict):
        await other.ingestion.ingest_file(b"new content entirely", "new.txt", IngestCommand(force=True))
    assert (await other.store.list_documents(offset=0, limit=10)).total == 1, "force re-ingests; it never wipes"

    assert (await other.documents.reset()).documents_deleted == 1
    assert await other.store.embedding_identity() is None
    after = await other.ingestion.ingest_file(b"new content entirely", "new.txt", IngestCommand())
    assert after.status == "ingested"
    assert await other.store.embedding_identity() == await other.embedder.embedding_identity()
    assert [d.source_id for d in (await other.store.list_documents(offset=0, limit=10)).items] == ["new.txt"]
    await close_container(other)


async def test_markdown_upload_is_chunked_by_headers_unless_the_request_says_otherwise(container: Container) -> None:
    text = "# Aurora T-200\n\n## Brakes\n\n" + "Check the brake pads monthly. " * 30 + "\n\n## Tyres\n\nKeep 3 bar.\n"
    result = await container.ingestion.ingest_file(text.encode(), "aurora.md", IngestCommand())
    document = await container.store.get_document(result.document_id)
    assert document is not None and document.title == "Aurora T-200"
    assert document.metadata["chunking"]["strategy"] == "markdown"
    listings = await container.store.get_chunks(result.document_id)
    assert {listing.chunk.section for listing in listings} >= {"Aurora T-200 > Brakes", "Aurora T-200 > Tyres"}
    chosen = await container.ingestion.ingest_file(
        (text + "\nRevised.\n").encode(), "aurora-recursive.md", IngestCommand(chunking="recursive")
    )
    chosen_document = await container.store.get_document(chosen.document_id)
    assert chosen_document is not None and chosen_document.metadata["chunking"]["strategy"] == "recursive"


class RecordingObserver:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def stage(self, stage: str) -> None:
        self.events.append(("stage", stage))

    def embedded(self, done: int, total: int) -> None:
        self.events.append(("embedded", (done, total)))

    def ocr_read(self, done: int, total: int) -> None:
        self.events.append(("ocr_read", (done, total)))


async def test_ocr_progress_is_reported_while_parsing(container: Container) -> None:
    from carrag.bench.ocr import scanned_copy
    from carrag.services.parsers.pdf import PlacedText
    from tests.services.parsers.formats import REAL

    scan, _ = scanned_copy((REAL / "fake-memo.pdf").read_bytes(), pages=1, dpi=50)
    pages_read: list[int] = []

    def reader(page, area):  # the real engine is exercised in tests/services/parsers/test_pdf_ocr.py
        pages_read.append(page.number)
        return PlacedText("There were 20,000 bottles of water delivered on January 23, 2023.")

    container.ingestion.ocr = reader
    observer = RecordingObserver()
    result = await container.ingestion.ingest_file(scan, "scanned-memo.pdf", IngestCommand(), observer)
    assert pages_read == [0]
    assert observer.events[:3] == [("stage", "parsing"), ("ocr_read", (0, 1)), ("ocr_read", (1, 1))], (
        "the page is announced as it starts, so a one-page scan shows progress while it is read"
    )
    document = await container.store.get_document(result.document_id)
    assert document is not None and document.metadata["ocr_pages"] == [1]


async def test_a_multi_page_tiff_is_read_by_ocr_page_by_page(container: Container) -> None:
    from PIL import Image

    frames = [Image.new("L", (300, 200), color=255) for _ in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:])

    class Reader:
        def __call__(self, page, area):
            raise AssertionError("not a PDF")

        def picture(self, image) -> str:
            assert image.shape == (200, 300, 3)
            return f"Invoice page with {image.shape[1]} pixels across."

    container.ingestion.ocr = Reader()
    observer = RecordingObserver()
    result = await container.ingestion.ingest_file(buffer.getvalue(), "scan.tiff", IngestCommand(), observer)
    progress = [value for kind, value in observer.events if kind == "ocr_read"]
    assert progress == [(0, 3), (1, 3), (2, 3), (3, 3)]
    document = await container.store.get_document(result.document_id)
    assert document is not None and document.source_type == "image" and document.metadata["pages"] == 3
    chunks = await container.store.get_chunks(result.document_id)
    assert {page for listing in chunks for page in listing.chunk.pages} == {1, 2, 3}


async def test_ocr_follows_the_setting(settings, embedding_backend) -> None:
    from carrag.services.parsers.pdf_ocr import ocr_available

    for enabled in (True, False):
        container = await open_container(settings.model_copy(update={"ocr_enabled": enabled}), embedding_backend)
        try:
            assert (container.ingestion.ocr is not None) == (enabled and ocr_available())
        finally:
            await close_container(container)

"""The same content under another source id is detected by its content hash (normalised text):
by default nothing is stored and the answer names the document that already holds it."""

from __future__ import annotations

from carrag.services.container import Container
from carrag.services.ids import content_hash
from carrag.services.models import SearchFilters
from carrag.services.requests import IngestCommand, SearchQuery
from tests.conftest import close_container, make_settings, open_container

TEXT = "# Towing\n\nCross the safety chains under the tongue.\nCheck the trailer tyres before every trip.\n"


async def test_same_text_under_another_source_is_a_duplicate(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand())
    calls = container.embedder.stats.backend_calls
    copy = await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand(source_id="docs/towing.md"))
    assert copy.status == "duplicate"
    assert (copy.document_id, copy.source_id, copy.chunk_count) == (first.document_id, "towing.md", first.chunk_count)
    assert container.embedder.stats.backend_calls == calls, "nothing embedded for a duplicate"
    assert await container.store.find_by_source("docs/towing.md") is None
    assert (await container.store.list_documents(offset=0, limit=10)).total == 1


async def test_whitespace_and_line_endings_do_not_make_a_copy_new(container: Container) -> None:
    await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand())
    crlf = TEXT.replace("\n", "\r\n").replace("tongue.", "tongue.   ")
    copy = await container.ingestion.ingest_text(crlf, "towing-windows.md", IngestCommand())
    assert copy.status == "duplicate"
    assert content_hash(TEXT) == content_hash(crlf) != content_hash(TEXT.replace("tyres", "tires"))


async def test_same_source_is_still_unchanged_and_changed_text_is_ingested(container: Container) -> None:
    first = await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand())
    again = await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand())
    assert again.status == "unchanged" and again.document_id == first.document_id
    other = await container.ingestion.ingest_file(
        TEXT.replace("tyres", "lights").encode(), "lights.md", IngestCommand()
    )
    assert other.status == "ingested"


async def test_allow_duplicates_stores_copies(tmp_path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, allow_duplicates=True), embedding_backend)
    try:
        first = await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand())
        copy = await container.ingestion.ingest_file(TEXT.encode(), "copy/towing.md", IngestCommand())
        assert copy.status == "ingested" and copy.document_id != first.document_id
        assert (await container.store.list_documents(offset=0, limit=10)).total == 2
        outcome = await container.search.search(SearchQuery("safety chains tongue", top_k=5))
        texts = [hit.text for hit in outcome.hits]
        assert len(texts) == len(set(texts)) >= 1, "the copy's passage is not shown a second time"
    finally:
        await close_container(container)


async def test_a_duplicates_tags_and_metadata_reach_the_document_holding_the_content(container: Container) -> None:
    """The README's flow: the CLI ingests a file, then the same file is uploaded with tags=maintenance;
    nothing is stored twice, but a tag filter must find the content (the tags were silently dropped)."""
    first = await container.ingestion.ingest_file(TEXT.encode(), "towing.md", IngestCommand(tags=["demo"]))
    calls = container.embedder.stats.backend_calls
    copy = await container.ingestion.ingest_file(
        TEXT.encode(),
        "towing.md",
        IngestCommand(source_id="docs/towing.md", tags=["maintenance"], metadata={"team": "fleet"}),
    )
    assert copy.status == "duplicate" and copy.document_id == first.document_id
    assert {"demo", "maintenance"} <= set(copy.tags)
    assert container.embedder.stats.backend_calls == calls, "nothing embedded"
    stored = await container.store.get_document(first.document_id)
    assert stored is not None and "maintenance" in stored.tags and stored.user_metadata == {"team": "fleet"}
    tagged = await container.search.search(
        SearchQuery("safety chains", top_k=5, filters=SearchFilters(tags=("maintenance",)))
    )
    assert tagged.hits and {hit.chunk.document_id for hit in tagged.hits} == {first.document_id}

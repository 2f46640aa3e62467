"""`IngestionService.ingest_many` (coalesced embedding), WHOLE_DOCUMENT_CHARS and `embedding_input`."""

from pathlib import Path

from carrag.services.errors import InvalidInput
from carrag.services.ingest_bulk import BulkDocument
from carrag.services.ingestion import IngestResult, embedding_input
from carrag.services.models import Chunk, ParsedDocument
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.vocabulary import SearchMode
from tests.conftest import close_container, make_settings, open_container

SENTENCE = "The coolant must be replaced every two years with the fluid named in the manual. "


def test_embedding_input_leads_with_title_and_section() -> None:
    document = ParsedDocument(text="...", filename="manual.pdf", source_type="pdf", title="Engine care")
    chunk = Chunk(0, "Replace it every two years.", 0, 27, section="Coolant")
    assert embedding_input(chunk, document) == "Engine care\nCoolant\nReplace it every two years."
    assert embedding_input(Chunk(0, "Engine care\nIntro", 0, 17), document) == "Engine care\nIntro", "no repeat"
    untitled = ParsedDocument(text="...", filename="notes.txt", source_type="text")
    assert embedding_input(Chunk(0, "plain", 0, 5), untitled) == "plain"


async def test_ingest_many_writes_each_document_and_reports_failures_in_order(
    tmp_path: Path, embedding_backend
) -> None:
    container = await open_container(
        make_settings(tmp_path, tagger="off", chunk_size=200, chunk_overlap=20), embedding_backend
    )
    try:
        documents = [
            BulkDocument(
                f"doc-{n}.txt", IngestCommand(title=f"Record {n}", external_id=f"r{n}"), text=SENTENCE * (1 + n % 3)
            )
            for n in range(20)
        ]
        documents.insert(5, BulkDocument("empty.txt", text="   "))
        calls_before = container.embedder.stats.backend_calls
        seen: list[int] = []
        results = await container.ingestion.ingest_many(documents, on_result=lambda position, _: seen.append(position))
        calls = container.embedder.stats.backend_calls - calls_before

        assert sorted(seen) == list(range(21))
        assert isinstance(results[5], InvalidInput) and "empty.txt contains no text" in results[5].message
        ingested = [r for r in results if isinstance(r, IngestResult)]
        assert [r.filename for r in ingested] == [f"doc-{n}.txt" for n in range(20)], "results keep the input order"
        assert await container.store.count_chunks() == sum(r.chunk_count for r in ingested)
        assert calls <= 10, f"the chunks of 20 documents should share embedding calls, made {calls}"
        stored = await container.store.get_document(ingested[7].document_id)
        assert stored is not None and stored.external_id == "r7" and stored.title == "Record 7"
        # Same vectors as the one-document path: a search for the text finds the documents.
        outcome = await container.search.search(
            SearchQuery("how often is coolant replaced", top_k=3, mode=SearchMode.KNN), expand=False
        )
        assert outcome.hits and outcome.hits[0].chunk.external_id.startswith("r")
    finally:
        await close_container(container)


async def test_short_documents_stay_whole(tmp_path: Path, embedding_backend) -> None:
    settings = make_settings(
        tmp_path, tagger="off", chunk_size=200, chunk_overlap=20, whole_document_chars=1000, allow_duplicates=True
    )  # chosen.txt repeats short.txt's text on purpose
    container = await open_container(settings, embedding_backend)
    try:
        ingest = container.ingestion.ingest_text
        short = await ingest(SENTENCE * 7, "short.txt", IngestCommand())  # 574 characters
        long = await ingest(SENTENCE * 14, "long.txt", IngestCommand())  # 1148 characters
        chosen = await ingest(SENTENCE * 7, "chosen.txt", IngestCommand(chunk_size=200, chunk_overlap=20))
        assert short.chunk_count == 1
        assert long.chunk_count > 1, "longer than WHOLE_DOCUMENT_CHARS: split by CHUNK_SIZE"
        assert chosen.chunk_count > 1, "a chunk_size given with the request is obeyed"
        document = await container.store.get_document(short.document_id)
        assert document is not None and document.metadata["chunking"]["chunk_size"] == 200
    finally:
        await close_container(container)

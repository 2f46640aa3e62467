from __future__ import annotations

import pytest

from carrag.services.container import Container
from carrag.services.errors import NotFound
from carrag.services.requests import IngestCommand


async def test_get_list_chunks_delete_and_sources(container: Container) -> None:
    documents = container.documents
    alpha = await container.ingestion.ingest_text("Alpha about brakes. " * 30, "a.txt", IngestCommand(tags=["Shared"]))
    beta = await container.ingestion.ingest_text(
        "Beta about tires. " * 30, "b.txt", IngestCommand(chunk_size=100, chunk_overlap=0)
    )

    assert (await documents.get(alpha.document_id)).source_id == "a.txt"
    listed = await documents.page(offset=0, limit=1)
    assert listed.total == 2 and [r.document_id for r in listed.items] == [beta.document_id], "newest first"
    assert (listed.offset, listed.limit) == (0, 1)
    tagged = await documents.page(tag="  SHARED ")
    assert [r.document_id for r in tagged.items] == [alpha.document_id], "the tag filter is normalised"

    chunks = await documents.chunks(beta.document_id, offset=1, limit=2)
    assert chunks.total == beta.chunk_count > 3 and [c.chunk.chunk_index for c in chunks.items] == [1, 2]
    assert await documents.sources() == [("a.txt", "text"), ("b.txt", "text")]

    deleted = await documents.delete(alpha.document_id)
    assert deleted.document_id == alpha.document_id and deleted.deleted
    for missing in (documents.get, documents.chunks, documents.delete):
        with pytest.raises(NotFound, match="No document with id"):
            await missing(alpha.document_id)

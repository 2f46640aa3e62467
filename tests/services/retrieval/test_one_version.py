"""A source replaced between the two legs never shows two versions in one result (`one_version.py`)."""

from __future__ import annotations

from carrag.services.container import Container
from carrag.services.models import DocumentRecord, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.retrieval.one_version import one_version_per_source


def hit(document_id: str, index: int, source: str = "a.txt", collection: str = "default") -> ScoredChunk:
    chunk = StoredChunk(
        document_id, index, f"{document_id} {index}", 0, 5, source, source, [], collection_id=collection
    )
    return ScoredChunk(chunk, 1.0)


class Records:
    """find_by_source answers, and the sources asked about."""

    def __init__(self, live: dict[tuple[str, str], str]) -> None:
        self.live, self.asked = live, []

    async def find_by_source(self, source_id: str, collection_id: str = "default") -> DocumentRecord | None:
        self.asked.append((collection_id, source_id))
        document_id = self.live.get((collection_id, source_id))
        if document_id is None:
            return None
        return DocumentRecord(document_id, source_id, source_id, "text", "h", 1, [], {}, "2026-01-01T00:00:00+00:00")


def keys(hits: list[ScoredChunk]) -> list[tuple[str, int]]:
    return [hit.chunk.key for hit in hits]


async def test_one_version_per_source_keeps_the_live_one() -> None:
    records = Records({("default", "a.txt"): "new"})
    lexical = [hit("old", 0), hit("old", 1), hit("other", 0, source="b.txt")]
    semantic = [hit("new", 0), hit("other", 0, source="b.txt")]
    kept = await one_version_per_source(records, lexical, semantic)  # type: ignore[arg-type]
    assert (keys(kept[0]), keys(kept[1])) == ([("other", 0)], [("new", 0), ("other", 0)])
    assert records.asked == [("default", "a.txt")], "only a source seen in two versions costs a look-up"


async def test_a_source_replaced_again_meanwhile_is_left_out() -> None:
    records = Records({("default", "a.txt"): "newest"})
    kept = await one_version_per_source(records, [hit("old", 0)], [hit("new", 0), hit("x", 0, source="b.txt")])  # type: ignore[arg-type]
    assert (keys(kept[0]), keys(kept[1])) == ([], [("x", 0)])


async def test_the_same_source_id_in_two_collections_is_two_sources() -> None:
    records = Records({})
    lexical, semantic = [hit("a", 0, collection="c1")], [hit("b", 0, collection="c2")]
    assert await one_version_per_source(records, lexical, semantic) == (lexical, semantic)  # type: ignore[arg-type]
    assert records.asked == []


async def test_a_search_never_fuses_two_versions(container: Container, monkeypatch) -> None:
    """The BM25 leg answered before a replace, the kNN leg after it: only the new version is shown."""
    await container.ingestion.ingest_file(b"The oil filter is changed every 10,000 km.", "oil.txt", IngestCommand())
    old_hits = await container.store.lexical_search("oil filter", 5, SearchFilters())
    await container.ingestion.ingest_file(b"The oil filter is changed every 15,000 km.", "oil.txt", IngestCommand())

    async def stale_lexical(*args, **kwargs):
        return old_hits  # as the BM25 leg saw it, before the replace

    monkeypatch.setattr(container.store, "lexical_search", stale_lexical)
    outcome = await container.search.search(SearchQuery("oil filter change interval", top_k=5, rerank=False))
    assert outcome.hits
    assert {hit.chunk.document_id for hit in outcome.hits} == {
        (await container.store.find_by_source("oil.txt")).document_id  # type: ignore[union-attr]
    }
    assert all("15,000" in hit.text for hit in outcome.hits)


async def test_two_versions_within_one_leg_or_across_the_legs_are_both_found() -> None:
    for lexical, semantic in (
        ([hit("old", 0), hit("new", 1)], []),
        ([], [hit("old", 0), hit("x", 0, source="b.txt"), hit("new", 1)]),
        ([hit("x", 0, source="b.txt"), hit("old", 0)], [hit("x", 1, source="b.txt"), hit("new", 1)]),
    ):
        records = Records({("default", "a.txt"): "new", ("default", "b.txt"): "x"})
        kept = await one_version_per_source(records, lexical, semantic)  # type: ignore[arg-type]
        assert "old" not in {hit.chunk.document_id for hit in (*kept[0], *kept[1])}
        assert records.asked == [("default", "a.txt")]

# ruff: noqa: F811 - the contract suite's fixtures are imported by name and used as parameters
"""The store contract for user metadata and the metadata filters (`SearchFilters`: tag prefixes,
``metadata.key = value``, source types, creation time, file name glob), on SQLite and Elasticsearch.

Expected results come from the data each test writes; the kNN leg is checked against a brute-force
cosine ranking of the chunks the filter allows.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from carrag.services.models import Chunk, SearchFilters, metadata_pairs
from carrag.services.stores.base import Store
from tests.services.stores.test_store_contract import (  # noqa: F401 - the fixtures, for both backends
    BASE_TIME,
    IDENTITY,
    keys,
    open_store,
    record,
    store,
    unit_vectors,
    write,
)

# document id → (source id, source type, tags, user metadata, minutes after BASE_TIME)
DOCUMENTS = {
    "manual": ("manuals/truck manual.pdf", "pdf", ["team-a", "ford"], {"team": "a", "year": 2024, "draft": False}, 0),
    "notes": ("docs/notes.md", "markdown", ["team-b"], {"team": "b", "year": 2023}, 60),
    "readme": ("readme.md", "markdown", ["teamwork"], {"team": "a", "lang": "de"}, 120),
    "report": ("docs/report (v1.2).txt", "text", ["reports"], {"year": "2024", "draft": True}, 180),
}


def at(minutes: int) -> str:
    return (BASE_TIME + timedelta(minutes=minutes)).isoformat()


METADATA_FILTER_CASES = [
    (SearchFilters(tag_prefixes=("team-",)), {"manual", "notes"}),
    (SearchFilters(tag_prefixes=("team",)), {"manual", "notes", "readme"}),
    (SearchFilters(tag_prefixes=("rep", "for")), {"manual", "report"}),
    (SearchFilters(tag_prefixes=("team-a",)), {"manual"}),
    (SearchFilters(tag_prefixes=("x",)), set()),
    (SearchFilters(tags=("ford",), tag_prefixes=("team",)), {"manual"}),  # every filter must hold
    (SearchFilters(metadata=(("team", "a"),)), {"manual", "readme"}),
    (SearchFilters(metadata=(("team", "a"), ("year", "2024"))), {"manual"}),
    (SearchFilters(metadata=(("year", "2024"),)), {"manual", "report"}),  # 2024 and "2024" alike
    (SearchFilters(metadata=(("draft", "true"),)), {"report"}),
    (SearchFilters(metadata=(("draft", "false"),)), {"manual"}),
    (SearchFilters(metadata=(("team", "A"),)), set()),  # values are compared exactly
    (SearchFilters(metadata=(("missing", "a"),)), set()),
    (SearchFilters(source_types=("markdown",)), {"notes", "readme"}),
    (SearchFilters(source_types=("pdf", "text")), {"manual", "report"}),
    (SearchFilters(source_types=("docx",)), set()),
    (SearchFilters(created_after=at(60)), {"notes", "readme", "report"}),  # at or after
    (SearchFilters(created_before=at(60)), {"manual"}),  # strictly before
    (SearchFilters(created_after=at(30), created_before=at(150)), {"notes", "readme"}),
    (SearchFilters(created_after=at(1000)), set()),
    (SearchFilters(filename_glob="*.md"), {"notes", "readme"}),
    (SearchFilters(filename_glob="truck manual.pdf"), {"manual"}),
    (SearchFilters(filename_glob="report (v1.?).txt"), {"report"}),
    (SearchFilters(filename_glob="[nr]*"), {"notes", "readme", "report"}),
    (SearchFilters(filename_glob="*.MD"), set()),  # case-sensitive, like GLOB
    (SearchFilters(filename_glob="docs/*"), set()),  # the file name, not the source id
    (SearchFilters(filename_glob="[unclosed"), set()),
    (
        SearchFilters(source="docs/*", source_types=("markdown",), metadata=(("team", "b"),), filename_glob="n*"),
        {"notes"},
    ),
]


async def write_documents(store: Store) -> None:
    for seed, (document_id, (source, source_type, tags, user_metadata, minutes)) in enumerate(DOCUMENTS.items()):
        document = dataclasses.replace(
            record(document_id, source, tags=tags, chunks=2, minutes=minutes),
            source_type=source_type,
            user_metadata=user_metadata,
        )
        await write(
            store, document, [f"shared maintenance words {document_id}", "another shared maintenance passage"], seed
        )


@pytest.mark.parametrize(("filters", "expected"), METADATA_FILTER_CASES)
async def test_metadata_filters_apply_to_both_legs(store: Store, filters: SearchFilters, expected: set[str]) -> None:
    await write_documents(store)
    lexical = await store.lexical_search("shared maintenance", 20, filters)
    semantic = await store.vector_search(unit_vectors(1, 42)[0], 20, filters)
    assert {h.chunk.document_id for h in lexical} == expected
    assert {h.chunk.document_id for h in semantic} == expected
    assert len(lexical) == len(semantic) == 2 * len(expected)


async def test_user_metadata_reads_back_apart_from_system_metadata(store: Store) -> None:
    document = dataclasses.replace(
        record("doc", "doc.txt", metadata={"parser": "text", "line_count": 3}),
        user_metadata={"team": "a", "year": 2024, "score": 1.5, "public": True},
    )
    await write(store, document, ["some words"])
    stored = await store.get_document("doc")
    assert stored is not None
    assert stored.user_metadata == {"team": "a", "year": 2024, "score": 1.5, "public": True}
    assert stored.metadata == {"parser": "text", "line_count": 3}
    assert await store.find_by_source("doc.txt") == stored
    assert metadata_pairs(stored.user_metadata) == ["team=a", "year=2024", "score=1.5", "public=true"]


async def test_metadata_update_replaces_user_metadata_only_and_filters_follow(store: Store) -> None:
    document = dataclasses.replace(
        record("doc", "doc.txt", tags=["kept"], chunks=2, title="Title", metadata={"parser": "text"}),
        user_metadata={"team": "a", "stage": "draft"},
    )
    vectors = await write(store, document, ["belt tension words", "blade words"])
    await write(store, record("other", "other.txt"), ["belt words elsewhere"], seed=1)

    updated = await store.update_metadata("doc", user_metadata={"team": "b"})
    assert updated is not None
    assert (updated.user_metadata, updated.metadata, updated.tags, updated.title) == (
        {"team": "b"},
        {"parser": "text"},
        ["kept"],
        "Title",
    )
    assert await store.get_document("doc") == updated
    for filters, expected in [
        (SearchFilters(metadata=(("team", "b"),)), {"doc"}),
        (SearchFilters(metadata=(("team", "a"),)), set()),
        (SearchFilters(metadata=(("stage", "draft"),)), set()),
    ]:
        assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, filters)} == expected
        assert {h.chunk.document_id for h in await store.vector_search(vectors[0], 10, filters)} == expected
    assert keys(await store.vector_search(vectors[1], 1, SearchFilters())) == [("doc", 1)], "vectors kept"

    retagged = await store.update_metadata("doc", tags=["new"])
    assert retagged is not None and retagged.user_metadata == {"team": "b"}, "None leaves metadata as it is"
    cleared = await store.update_metadata("doc", user_metadata={})
    assert cleared is not None and cleared.user_metadata == {} and cleared.tags == ["new"]
    assert await store.lexical_search("belt", 10, SearchFilters(metadata=(("team", "b"),))) == []
    assert await store.update_metadata("missing", user_metadata={"a": 1}) is None
    assert await store.check_integrity() == []


async def test_filtered_knn_returns_k_matching_chunks_nearest_first(store: Store) -> None:
    """A filter matching a few chunks far from the query still yields k of them (no post-filtering
    of an approximate top k), in brute-force cosine order, and nothing outside the filter."""
    matrix = unit_vectors(60, 7)
    allowed: dict[tuple[str, int], np.ndarray] = {}
    for n in range(60):
        team = "a" if n % 10 == 0 else "b"
        document = dataclasses.replace(record(f"d{n:02d}", f"d{n:02d}.txt"), user_metadata={"team": team})
        await store.write_document(document, [Chunk(0, f"text {n}", 0, 7)], matrix[n : n + 1], IDENTITY)
        if team == "a":
            allowed[(f"d{n:02d}", 0)] = matrix[n]
    query = matrix[1]  # a team-b chunk: its nearest neighbours are mostly team b
    filters = SearchFilters(metadata=(("team", "a"),))
    hits = await store.vector_search(query, 5, filters)
    ranked = sorted(allowed, key=lambda key: -float(allowed[key] @ query))
    assert keys(hits) == ranked[:5]
    assert len(await store.vector_search(query, 20, filters)) == len(allowed)

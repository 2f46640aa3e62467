"""The behaviour every store must have (carrag/services/stores/base.py), run against each backend:
SQLite always, Elasticsearch on the session's real node (skipped, with the reason, without one).

Expected results come from the data each test writes: kNN against a brute-force cosine ranking,
BM25 by which chunks share the question's words, filters and windows by construction.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from carrag.services.errors import EmbeddingModelMismatch
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, SearchFilters
from carrag.services.stores.base import Store
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.process_lock import StoreInUse
from carrag.services.stores.sqlite import SqliteStore
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name

DIMENSION = 8
IDENTITY = EmbeddingIdentity("test:contract-model", DIMENSION)
BASE_TIME = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("elasticsearch", id="elasticsearch", marks=pytest.mark.elasticsearch),
]

StoreOpener = Callable[[], Awaitable[Store]]


@pytest.fixture(params=BACKENDS)
async def open_store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[StoreOpener]:
    """Opens handles on one fresh store location; a second handle sees what the first wrote."""
    if request.param == "sqlite":
        path = tmp_path / "store.db"

        def make() -> Store:
            return SqliteStore(path)
    else:
        url, index = request.getfixturevalue("es_url"), es_index_name()

        def make() -> Store:
            return ElasticsearchStore(url, index=index, refresh_interval=ES_TEST_REFRESH_INTERVAL)

    opened: list[Store] = []

    async def opener() -> Store:
        store = make()
        await store.open()
        opened.append(store)
        return store

    yield opener
    if request.param == "elasticsearch" and opened:
        await drop_es_index(opened[0].client, index)  # type: ignore[attr-defined]
    for store in opened:
        await store.close()


@pytest.fixture
async def store(open_store: StoreOpener) -> Store:
    return await open_store()


# --- data helpers ---------------------------------------------------------------------------------
_document_counter = itertools.count()


def record(
    document_id: str,
    source_id: str,
    *,
    tags: list[str] | None = None,
    chunks: int = 1,
    minutes: int | None = None,
    title: str | None = None,
    metadata: dict | None = None,
) -> DocumentRecord:
    created = BASE_TIME + timedelta(minutes=next(_document_counter) if minutes is None else minutes)
    return DocumentRecord(
        document_id=document_id,
        filename=source_id.rsplit("/", 1)[-1],
        source_id=source_id,
        source_type="text",
        content_hash=f"hash-{document_id}",
        chunk_count=chunks,
        tags=tags or [],
        metadata=metadata or {},
        created_at=created.isoformat(),
        title=title,
    )


def chunks_of(*texts: str, section: str | None = None) -> list[Chunk]:
    chunks, offset = [], 0
    for index, text in enumerate(texts):
        chunks.append(Chunk(index, text, offset, offset + len(text), pages=[index + 1], section=section))
        offset += len(text) + 1
    return chunks


def unit_vectors(n: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(n, DIMENSION)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


async def write(store: Store, document: DocumentRecord, texts: list[str], seed: int = 0, **kwargs) -> np.ndarray:
    vectors = unit_vectors(len(texts), seed)
    await store.write_document(document, chunks_of(*texts, **kwargs), vectors, IDENTITY)
    return vectors


def keys(hits) -> list[tuple[str, int]]:
    return [(h.chunk.document_id, h.chunk.chunk_index) for h in hits]


# --- the contract ---------------------------------------------------------------------------------
async def test_empty_store_answers_every_read(store: Store) -> None:
    assert await store.embedding_identity() is None
    assert await store.count_chunks() == 0
    assert await store.lexical_search("anything at all", 5, SearchFilters()) == []
    assert await store.vector_search(unit_vectors(1, 0)[0], 5, SearchFilters()) == []
    page = await store.list_documents(offset=0, limit=10)
    assert page.items == [] and page.total == 0
    assert await store.list_sources() == []
    assert await store.get_document("missing") is None
    assert await store.find_by_source("missing.txt") is None
    assert await store.get_chunks("missing") == []
    assert await store.get_windows([("missing", 3)], 1) == []
    assert await store.get_windows([], 1) == []
    assert await store.delete_document("missing") is False
    health = await store.health()
    assert health.status == "ok" and health.backend == store.backend


async def test_written_document_reads_back_exactly(store: Store) -> None:
    document = record(
        "doc-1",
        "manuals/truck.pdf",
        tags=["ford", "owners manual"],
        chunks=3,
        title="Truck Manual",
        metadata={"total_pages": 12, "nested": {"a": [1, 2]}, "when": datetime(2024, 1, 1)},
    )
    texts = ["Engine oil and the oil filter.", "Tire pressure is on the door.", "Towing limits by axle."]
    vectors = unit_vectors(3, 0)
    assert await store.write_document(document, chunks_of(*texts, section="Maintenance"), vectors, IDENTITY) is None

    stored = await store.get_document("doc-1")
    assert stored is not None
    assert (stored.document_id, stored.source_id, stored.filename, stored.source_type) == (
        "doc-1",
        "manuals/truck.pdf",
        "truck.pdf",
        "text",
    )
    assert stored.tags == ["ford", "owners manual"] and stored.chunk_count == 3 and stored.title == "Truck Manual"
    assert stored.content_hash == "hash-doc-1" and stored.created_at == document.created_at
    assert stored.metadata == {"total_pages": 12, "nested": {"a": [1, 2]}, "when": "2024-01-01 00:00:00"}
    assert await store.find_by_source("manuals/truck.pdf") == stored
    assert await store.list_sources() == [("manuals/truck.pdf", "text")]
    assert await store.count_chunks() == 3
    assert await store.embedding_identity() == IDENTITY

    listings = await store.get_chunks("doc-1")
    assert [item.chunk.chunk_index for item in listings] == [0, 1, 2]
    assert [item.chunk.text for item in listings] == texts
    assert all(item.vector_dimension == DIMENSION for item in listings)
    first = listings[0].chunk
    assert (first.char_start, first.char_end, first.pages, first.section) == (0, len(texts[0]), [1], "Maintenance")
    assert (first.filename, first.source_id, first.tags, first.title) == (
        "truck.pdf",
        "manuals/truck.pdf",
        ["ford", "owners manual"],
        "Truck Manual",
    )
    assert [item.chunk.chunk_index for item in await store.get_chunks("doc-1", offset=1, limit=1)] == [1]


async def test_find_by_content_hash_is_an_exact_match(store: Store) -> None:
    await write(store, record("doc-a", "a.txt"), ["Alpha text."])
    await write(store, record("doc-b", "copies/b.txt"), ["Beta text."])
    found = await store.find_by_content_hash("hash-doc-b")
    assert found is not None and (found.document_id, found.source_id) == ("doc-b", "copies/b.txt")
    assert await store.find_by_content_hash("hash-doc") is None, "no prefix or partial matches"
    assert await store.find_by_content_hash("HASH-DOC-B") is None, "no case folding"
    await store.delete_document("doc-b")
    assert await store.find_by_content_hash("hash-doc-b") is None


async def test_lexical_search_stems_ranks_and_limits(store: Store) -> None:
    await write(
        store,
        record("a", "a.txt", chunks=3),
        [
            "Replacing the oil filters regularly keeps the engine healthy.",
            "The oil level is checked with the dipstick.",
            "Tire rotation every five thousand miles.",
        ],
    )
    await write(store, record("b", "b.txt", chunks=1), ["Cabin air filter replacement steps."], seed=1)

    hits = await store.lexical_search("How do I replace the oil filter?", 10, SearchFilters())
    # stemming: "replace" ~ "Replacing"/"replacement", "filter" ~ "filters"
    assert set(keys(hits)) == {("a", 0), ("a", 1), ("b", 0)}
    assert keys(hits)[0] == ("a", 0), "the chunk sharing all three words ranks first"
    scores = [h.score for h in hits]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    assert keys(await store.lexical_search("oil filter replace", 1, SearchFilters())) == [("a", 0)]
    assert await store.lexical_search("submarine periscope", 5, SearchFilters()) == []
    await store.lexical_search("the of and", 5, SearchFilters())  # only stopwords: must not raise
    assert await store.lexical_search("oil", 0, SearchFilters()) == []


async def test_lexical_search_matches_the_heading(store: Store) -> None:
    await write(store, record("a", "a.txt", chunks=1, title="Snowmobile handbook"), ["Check the belt tension."])
    await write(store, record("b", "b.txt", chunks=1), ["Belt tension for the lawn mower."], seed=1)
    hits = await store.lexical_search("snowmobile belt", 5, SearchFilters())
    assert keys(hits)[0] == ("a", 0), "a title word counts, as a weaker field"


async def test_user_text_is_never_query_syntax(store: Store) -> None:
    await write(store, record("a", "a.txt"), ['engine "oil" NEAR(filter) AND * col:umn [x] {y} /z/ ~1 ^2'])
    for question in [
        '"unbalanced',
        "NEAR(",
        "a AND OR NOT",
        "*",
        "col:umn",
        "()",
        "^start",
        "/regex.*/",
        "field:value~2",
        "[1 TO 5]",
        "{!lucene}",
        "\\",
        "a\x00b",
        "émile zoë",
    ]:
        await store.lexical_search(question, 5, SearchFilters())  # must not raise
    assert keys(await store.lexical_search('oil" OR (filter', 5, SearchFilters())) == [("a", 0)]


async def test_vector_search_matches_brute_force_cosine(store: Store) -> None:
    vectors = {}
    for n, (document_id, count) in enumerate([("a", 7), ("b", 5), ("c", 8)]):
        texts = [f"chunk {i} of {document_id}" for i in range(count)]
        document = record(document_id, f"{document_id}.txt", chunks=count)
        vectors[document_id] = await write(store, document, texts, seed=n)
    all_keys = [(d, i) for d, matrix in vectors.items() for i in range(len(matrix))]
    matrix = np.vstack(list(vectors.values()))
    for seed in range(3):
        query = unit_vectors(1, 100 + seed)[0]
        cosine = matrix @ query
        expected = [all_keys[p] for p in np.argsort(-cosine)[:6]]
        hits = await store.vector_search(query, 6, SearchFilters())
        assert keys(hits) == expected
        assert np.allclose([h.score for h in hits], np.sort(cosine)[::-1][:6], atol=1e-4), "scores are cosines"
    own = vectors["b"][2]
    top = await store.vector_search(own, 1, SearchFilters())
    assert keys(top) == [("b", 2)] and top[0].score == pytest.approx(1.0, abs=1e-4)


FILTER_CASES = [
    (SearchFilters(tags=("ford",)), {"manual"}),
    (SearchFilters(tags=("ford", "notes")), {"manual", "notes"}),
    (SearchFilters(tags=("missing",)), set()),
    (SearchFilters(source="docs/notes.md"), {"notes"}),
    (SearchFilters(source="docs/notes"), set()),
    (SearchFilters(source="*.md"), {"notes", "readme"}),
    (SearchFilters(source="docs/*"), {"notes", "report"}),
    (SearchFilters(source="docs/?otes.md"), {"notes"}),
    (SearchFilters(source="[mr]*"), {"manual", "readme"}),
    (SearchFilters(source="[^mr]*"), {"notes", "report"}),
    (SearchFilters(source="docs/r[a-f]port (v1.2).txt"), {"report"}),
    (SearchFilters(source="*.MD"), set()),  # case-sensitive, like GLOB
    (SearchFilters(source="docs/[unclosed"), set()),
    (SearchFilters(document_ids=("manual", "readme")), {"manual", "readme"}),
    (SearchFilters(tags=("notes",), source="docs/*", document_ids=("notes", "report")), {"notes"}),
]


async def test_filters_apply_to_both_legs(store: Store) -> None:
    sources = {
        "manual": ("manual.pdf", ["ford", "f-150"]),
        "notes": ("docs/notes.md", ["notes"]),
        "readme": ("readme.md", ["docs"]),
        "report": ("docs/report (v1.2).txt", ["reports", "notes-archive"]),
    }
    for seed, (document_id, (source, tags)) in enumerate(sources.items()):
        await write(
            store,
            record(document_id, source, tags=tags, chunks=2),
            [f"shared maintenance words {document_id}", "another shared maintenance passage"],
            seed=seed,
        )
    query = unit_vectors(1, 42)[0]
    for filters, expected in FILTER_CASES:
        lexical = await store.lexical_search("shared maintenance", 20, filters)
        semantic = await store.vector_search(query, 20, filters)
        assert {h.chunk.document_id for h in lexical} == expected, filters
        assert {h.chunk.document_id for h in semantic} == expected, filters
        assert len(lexical) == len(semantic) == 2 * len(expected), filters


async def test_windows_are_batched_and_deduplicated(store: Store) -> None:
    await write(store, record("a", "a.txt", chunks=10), [f"a{i}" for i in range(10)])
    await write(store, record("b", "b.txt", chunks=3), [f"b{i}" for i in range(3)], seed=1)

    chunks = await store.get_windows([("a", 4), ("a", 5), ("b", 0), ("a", 9), ("missing", 1)], 1)
    assert [c.key for c in chunks] == [("a", 3), ("a", 4), ("a", 5), ("a", 6), ("a", 8), ("a", 9), ("b", 0), ("b", 1)]
    assert [c.text for c in chunks[:2]] == ["a3", "a4"]
    assert [c.key for c in await store.get_windows([("a", 4), ("a", 4)], 0)] == [("a", 4)]
    assert [c.key for c in await store.get_windows([("b", 1)], 5)] == [("b", 0), ("b", 1), ("b", 2)]


async def retired_versions_deleted(store: Store) -> None:
    """Elasticsearch deletes a retired version's chunks a grace period after it is retired (they are
    invisible meanwhile: `stores/elasticsearch/retirement.py`); wait for that. SQLite deletes at once."""
    retired = getattr(getattr(store, "versions", None), "retired", None)
    if retired is not None:
        await retired.flush()


async def test_delete_leaves_nothing(store: Store) -> None:
    doomed = await write(store, record("gone", "gone.txt", tags=["x"], chunks=2), ["unique zebra words", "more zebra"])
    await write(store, record("kept", "kept.txt", tags=["x"], chunks=1), ["ordinary text"], seed=1)

    assert await store.delete_document("gone") is True
    assert await store.delete_document("gone") is False
    assert await store.get_document("gone") is None
    assert await store.find_by_source("gone.txt") is None
    assert await store.get_chunks("gone") == []
    assert await store.lexical_search("zebra", 10, SearchFilters()) == []
    await retired_versions_deleted(store)
    assert await store.get_windows([("gone", 0)], 2) == [], "the chunks themselves are gone"
    assert all(h.chunk.document_id == "kept" for h in await store.vector_search(doomed[0], 10, SearchFilters()))
    assert await store.count_chunks() == 1
    assert [d.document_id for d in (await store.list_documents(offset=0, limit=10, tag="x")).items] == ["kept"]
    assert await store.list_sources() == [("kept.txt", "text")]


async def test_metadata_update_changes_document_and_chunks_in_place(store: Store) -> None:
    vectors = await write(
        store,
        record("doc", "doc.txt", tags=["old"], chunks=2, title="Lawn handbook"),
        ["check the belt tension", "sharpen the blade"],
        section="Care",
    )
    await write(store, record("other", "other.txt", tags=["old"], chunks=1), ["belt words elsewhere"], seed=1)

    updated = await store.update_metadata("doc", tags=["new", "fresh"], title="Snowmobile manual")
    assert updated is not None
    assert (updated.document_id, updated.tags, updated.title, updated.chunk_count) == (
        "doc",
        ["new", "fresh"],
        "Snowmobile manual",
        2,
    )
    assert await store.get_document("doc") == updated
    assert (await store.find_by_source("doc.txt")) == updated
    listed = await store.get_chunks("doc")
    assert [(c.chunk.tags, c.chunk.title, c.chunk.text) for c in listed] == [
        (["new", "fresh"], "Snowmobile manual", "check the belt tension"),
        (["new", "fresh"], "Snowmobile manual", "sharpen the blade"),
    ]
    assert [d.document_id for d in (await store.list_documents(offset=0, limit=10, tag="new")).items] == ["doc"]
    assert [d.document_id for d in (await store.list_documents(offset=0, limit=10, tag="old")).items] == ["other"]
    only_new = SearchFilters(tags=("new",))
    assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, only_new)} == {"doc"}
    assert {h.chunk.document_id for h in await store.vector_search(vectors[0], 10, only_new)} == {"doc"}
    assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, SearchFilters(tags=("old",)))} == {
        "other"
    }
    assert set(keys(await store.lexical_search("snowmobile", 10, SearchFilters()))) == {("doc", 0), ("doc", 1)}
    assert await store.lexical_search("lawn handbook", 10, SearchFilters()) == [], "the old title is no longer indexed"
    assert keys(await store.vector_search(vectors[1], 1, SearchFilters())) == [("doc", 1)], "vectors kept"
    assert await store.count_chunks() == 3
    assert await store.check_integrity() == []


async def test_metadata_update_leaves_out_fields_not_given_and_misses_unknown_ids(store: Store) -> None:
    await write(store, record("doc", "doc.txt", tags=["keep"], chunks=1, title="Kept title"), ["some words"])

    retitled = await store.update_metadata("doc", title="New title")
    assert retitled is not None and (retitled.tags, retitled.title) == (["keep"], "New title")
    retagged = await store.update_metadata("doc", tags=[])
    assert retagged is not None and (retagged.tags, retagged.title) == ([], "New title")
    assert (await store.get_chunks("doc"))[0].chunk.tags == []
    assert await store.update_metadata("missing", tags=["x"]) is None
    assert await store.get_document("missing") is None


async def test_listing_is_newest_first_with_paging_and_tag_filter(store: Store) -> None:
    for n in range(7):
        tags = ["even"] if n % 2 == 0 else ["odd"]
        await write(store, record(f"d{n}", f"s{n}.txt", tags=tags + ["all"], minutes=n), [f"text {n}"], seed=n)

    page = await store.list_documents(offset=0, limit=3)
    assert [d.document_id for d in page.items] == ["d6", "d5", "d4"] and page.total == 7
    page = await store.list_documents(offset=5, limit=3)
    assert [d.document_id for d in page.items] == ["d1", "d0"] and page.total == 7
    page = await store.list_documents(offset=1, limit=2, tag="even")
    assert [d.document_id for d in page.items] == ["d4", "d2"] and page.total == 4
    page = await store.list_documents(offset=0, limit=10, tag="none")
    assert page.items == [] and page.total == 0
    assert [s for s, _ in await store.list_sources()] == [f"s{n}.txt" for n in range(7)]


async def test_find_documents_by_id_prefix_source_id_or_file_name(store: Store) -> None:
    await write(store, record("ab12-0001", "docs/guide.md", minutes=1), ["one"])
    await write(store, record("ab12-0002", "guide.md", minutes=2), ["two"])
    await write(store, record("cd34-0003", "notes/ab12", minutes=3), ["three"])
    await write(store, record("ef56-0004", "docs/100%_*done?.md", minutes=4), ["four"])

    async def found(reference: str, limit: int = 10) -> tuple[list[str], int]:
        page = await store.find_documents(reference, limit=limit)
        return [d.document_id for d in page.items], page.total

    # exact id first, then exact source id, then the rest newest first
    assert await found("ab12-0001") == (["ab12-0001"], 1)
    assert await found("guide.md") == (["ab12-0002", "ab12-0001"], 2), "source id, then file name"
    assert await found("ab12") == (["cd34-0003", "ab12-0002", "ab12-0001"], 3), "file name and id prefix"
    assert await found("ab12", limit=1) == (["cd34-0003"], 3)
    assert await found("100%_*done?.md") == (["ef56-0004"], 1), "no LIKE or wildcard syntax"
    assert await found("100%") == ([], 0) and await found("*") == ([], 0) and await found("uide.md") == ([], 0)
    assert await found("GUIDE.md") == ([], 0), "case-sensitive"
    assert await found("docs/guide.md") == (["ab12-0001"], 1)


async def test_same_timestamp_orders_by_document_id(store: Store) -> None:
    for document_id in ("c", "a", "b"):
        await write(store, record(document_id, f"{document_id}.txt", minutes=0), ["same time"])
    assert [d.document_id for d in (await store.list_documents(offset=0, limit=5)).items] == ["a", "b", "c"]


async def test_reingest_replaces_the_old_version(store: Store) -> None:
    old = await write(
        store,
        record("old", "report.txt", tags=["v1"], chunks=3),
        ["old walrus one", "old walrus two", "old walrus three"],
    )
    replaced = await store.write_document(
        record("new", "report.txt", tags=["v2"], chunks=1), chunks_of("new pelican"), unit_vectors(1, 9), IDENTITY
    )
    assert replaced == "old"
    assert await store.get_document("old") is None
    assert (await store.find_by_source("report.txt")).document_id == "new"
    assert await store.get_chunks("old") == []
    assert await store.lexical_search("walrus", 10, SearchFilters()) == []
    assert keys(await store.lexical_search("pelican", 10, SearchFilters())) == [("new", 0)]
    assert {h.chunk.document_id for h in await store.vector_search(old[0], 10, SearchFilters())} == {"new"}
    assert await store.count_chunks() == 1
    page = await store.list_documents(offset=0, limit=10)
    assert [d.document_id for d in page.items] == ["new"] and page.total == 1
    assert (await store.list_documents(offset=0, limit=10, tag="v1")).total == 0
    assert await store.list_sources() == [("report.txt", "text")]


async def test_readers_see_the_old_version_or_the_new_never_both_or_neither(store: Store) -> None:
    chunk_count = 40
    await write(store, record("v0", "live.txt", chunks=chunk_count), [f"heron passage {i}" for i in range(chunk_count)])
    observed: list[frozenset[tuple[str, int]]] = []
    done = asyncio.Event()

    async def reader() -> None:
        while not done.is_set():
            hits = await store.lexical_search("heron passage", 200, SearchFilters())
            observed.append(frozenset(keys(hits)))

    async def writer() -> None:
        try:
            for version in range(1, 5):
                await write(
                    store,
                    record(f"v{version}", "live.txt", chunks=chunk_count),
                    [f"heron passage {i} version {version}" for i in range(chunk_count)],
                    seed=version,
                )
                # each version is read at least once before the next replaces it, however loaded the machine
                # (under load the writes could finish with only two reads, and the test would check little)
                reads_before = len(observed)
                async with asyncio.timeout(30):
                    while len(observed) <= reads_before:
                        await asyncio.sleep(0.001)
        finally:
            done.set()

    await asyncio.gather(writer(), reader(), reader())
    print(f"{len(observed)} reads during 4 replacements")
    assert len(observed) >= 4
    for seen in observed:
        versions = {document_id for document_id, _ in seen}
        assert len(versions) == 1, f"a reader saw {sorted(versions)} at once"
        assert len(seen) == chunk_count, f"a reader saw {len(seen)} of {chunk_count} chunks"
    assert keys(await store.lexical_search("version", 1, SearchFilters()))[0][0] == "v4"


async def test_wipe_removes_everything_including_the_model(store: Store) -> None:
    await write(store, record("a", "a.txt", tags=["t"]), ["some words"])
    await store.wipe()
    assert await store.embedding_identity() is None
    assert await store.count_chunks() == 0
    assert (await store.list_documents(offset=0, limit=5)).total == 0
    assert await store.lexical_search("words", 5, SearchFilters()) == []
    assert await store.list_sources() == []
    # a model with another dimension may follow
    other = EmbeddingIdentity("test:other", 3)
    vector = np.array([[0.6, 0.8, 0.0]], dtype=np.float32)
    await store.write_document(record("b", "b.txt"), chunks_of("new words"), vector, other)
    assert await store.embedding_identity() == other
    assert keys(await store.vector_search(vector[0], 3, SearchFilters())) == [("b", 0)]
    assert (await store.get_chunks("b"))[0].vector_dimension == 3


async def test_another_embedding_model_is_refused_and_nothing_is_written(store: Store) -> None:
    await write(store, record("a", "a.txt"), ["first document"])
    for identity in (EmbeddingIdentity("other:model", DIMENSION), EmbeddingIdentity(IDENTITY.model, 4)):
        with pytest.raises(EmbeddingModelMismatch, match="test:contract-model"):
            await store.write_document(
                record("b", "b.txt"), chunks_of("second"), unit_vectors(1, 1)[:, : identity.dimension], identity
            )
    assert await store.get_document("b") is None
    assert await store.count_chunks() == 1
    assert await store.embedding_identity() == IDENTITY


async def test_mismatched_vectors_are_refused_before_writing(store: Store) -> None:
    with pytest.raises(ValueError):
        await store.write_document(record("a", "a.txt"), chunks_of("one", "two"), unit_vectors(1, 0), IDENTITY)
    with pytest.raises(ValueError):
        await store.write_document(record("a", "a.txt"), chunks_of("one"), unit_vectors(1, 0)[:, :4], IDENTITY)
    assert await store.count_chunks() == 0 and await store.get_document("a") is None


async def test_a_second_handle_sees_the_same_store(open_store: StoreOpener) -> None:
    first = await open_store()
    vectors = await write(first, record("a", "a.txt", tags=["t"], chunks=2), ["persistent words", "more words"])
    one_at_a_time = first.backend == "sqlite"  # one process per SQLite file: the second waits for the first
    if one_at_a_time:
        with pytest.raises(StoreInUse):
            await open_store()
        await first.close()
    second = await open_store()
    assert await second.embedding_identity() == IDENTITY
    assert await second.count_chunks() == 2
    assert keys(await second.vector_search(vectors[1], 1, SearchFilters())) == [("a", 1)]
    assert keys(await second.lexical_search("persistent", 5, SearchFilters())) == [("a", 0)]
    await second.delete_document("a")
    if one_at_a_time:
        await second.close()
        first = await open_store()
    assert await first.count_chunks() == 0
    assert await first.vector_search(vectors[1], 1, SearchFilters()) == []

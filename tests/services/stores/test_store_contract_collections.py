"""The store contract for collections (knowledge bases), on SQLite and Elasticsearch: the registry,
documents scoped per (collection, source), both search legs restricted to collections, and deleting
a collection leaving nothing behind."""

# ruff: noqa: F811  (the contract suite's fixtures, imported, are parameters here)
from __future__ import annotations

import asyncio
import dataclasses

import pytest

from carrag.services.errors import Conflict
from carrag.services.models import DEFAULT_COLLECTION, Collection, DocumentRecord, SearchFilters
from carrag.services.stores.base import Store
from tests.services.stores.test_store_contract import (  # noqa: F401  (fixtures)
    keys,
    open_store,
    record,
    store,
    unit_vectors,
    write,
)

CREATED = "2024-05-02T10:00:00+00:00"


def in_collection(document: DocumentRecord, collection_id: str) -> DocumentRecord:
    return dataclasses.replace(document, collection_id=collection_id)


def counts(collections: list[Collection]) -> dict[str, tuple[str, int]]:
    return {c.collection_id: (c.name, c.document_count) for c in collections}


async def test_default_always_exists_and_takes_documents_without_a_collection(store: Store) -> None:
    assert counts(await store.list_collections()) == {DEFAULT_COLLECTION: (DEFAULT_COLLECTION, 0)}
    await write(store, record("a", "a.txt"), ["alpha words"])
    assert (await store.get_document("a")).collection_id == DEFAULT_COLLECTION  # type: ignore[union-attr]
    assert counts(await store.list_collections()) == {DEFAULT_COLLECTION: (DEFAULT_COLLECTION, 1)}
    hits = await store.lexical_search("alpha", 5, SearchFilters(collection_ids=(DEFAULT_COLLECTION,)))
    assert keys(hits) == [("a", 0)] and hits[0].chunk.collection_id == DEFAULT_COLLECTION


async def test_create_list_and_rename_keep_ids_and_refuse_taken_names(store: Store) -> None:
    created = await store.create_collection(Collection("id-a", "team-a", CREATED))
    assert (created.collection_id, created.name, created.document_count) == ("id-a", "team-a", 0)
    with pytest.raises(Conflict):
        await store.create_collection(Collection("id-other", "team-a", CREATED))
    await store.create_collection(Collection("id-b", "team-b", CREATED))
    await write(store, in_collection(record("b1", "b.txt"), "id-b"), ["bravo words"])
    assert counts(await store.list_collections()) == {
        DEFAULT_COLLECTION: (DEFAULT_COLLECTION, 0),
        "id-a": ("team-a", 0),
        "id-b": ("team-b", 1),
    }
    with pytest.raises(Conflict):
        await store.rename_collection("id-b", "team-a")
    renamed = await store.rename_collection("id-b", "team-c")
    assert renamed is not None and (renamed.collection_id, renamed.name, renamed.document_count) == (
        "id-b",
        "team-c",
        1,
    )
    assert [c.name for c in await store.list_collections()] == ["default", "team-a", "team-c"]
    assert (await store.get_document("b1")).collection_id == "id-b"  # type: ignore[union-attr]
    # the old name is free again
    await store.create_collection(Collection("id-d", "team-b", CREATED))
    assert await store.rename_collection("missing", "whatever") is None


async def test_the_same_source_in_two_collections_is_two_documents(store: Store) -> None:
    await store.create_collection(Collection("id-a", "team-a", CREATED))
    shared = record("in-default", "manual.txt", tags=["t"])
    await write(store, shared, ["belt tension check"], seed=1)
    vectors = await write(store, in_collection(record("in-a", "manual.txt", tags=["t"]), "id-a"), ["belt wear"], seed=2)
    assert (await store.find_by_source("manual.txt")).document_id == "in-default"  # type: ignore[union-attr]
    assert (await store.find_by_source("manual.txt", "id-a")).document_id == "in-a"  # type: ignore[union-attr]
    assert await store.find_by_source("manual.txt", "missing") is None
    assert (await store.find_by_content_hash("hash-in-a", "id-a")).document_id == "in-a"  # type: ignore[union-attr]
    assert await store.find_by_content_hash("hash-in-a") is None, "content hashes are matched per collection"

    only_a = SearchFilters(collection_ids=("id-a",))
    both = SearchFilters(collection_ids=(DEFAULT_COLLECTION, "id-a"))
    assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, only_a)} == {"in-a"}
    assert {h.chunk.document_id for h in await store.vector_search(vectors[0], 10, only_a)} == {"in-a"}
    assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, both)} == {"in-default", "in-a"}
    assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, SearchFilters())} == {
        "in-default",
        "in-a",
    }, "no collection filter: every collection (admin use)"
    hit = (await store.vector_search(vectors[0], 1, only_a))[0]
    assert (hit.chunk.document_id, hit.chunk.collection_id) == ("in-a", "id-a")
    with_tags = SearchFilters(tags=("t",), collection_ids=(DEFAULT_COLLECTION,))
    assert {h.chunk.document_id for h in await store.lexical_search("belt", 10, with_tags)} == {"in-default"}

    listed = await store.list_documents(offset=0, limit=10, collection_ids=["id-a"])
    assert [d.document_id for d in listed.items] == ["in-a"] and listed.total == 1
    assert (await store.list_documents(offset=0, limit=10)).total == 2
    assert await store.list_sources(["id-a"]) == [("manual.txt", "text")]

    # re-ingesting into one collection replaces only that collection's version
    await write(store, in_collection(record("in-a-2", "manual.txt"), "id-a"), ["belt replaced"], seed=3)
    assert await store.get_document("in-a") is None
    assert (await store.get_document("in-default")) is not None
    assert await store.count_chunks() == 2
    assert await store.check_integrity() == []


async def test_deleting_a_collection_leaves_nothing_behind(store: Store) -> None:
    await store.create_collection(Collection("id-a", "team-a", CREATED))
    vectors = await write(store, record("kept", "kept.txt"), ["gearbox oil"], seed=1)
    for n in range(3):
        await write(store, in_collection(record(f"a{n}", f"a{n}.txt", chunks=2), "id-a"), ["gearbox", "oil"], seed=n)
    assert await store.count_chunks() == 7

    assert await store.delete_collection("id-a") is True
    assert [c.collection_id for c in await store.list_collections()] == [DEFAULT_COLLECTION]
    for n in range(3):
        assert await store.get_document(f"a{n}") is None
        assert await store.get_chunks(f"a{n}") == []
    assert await store.count_chunks() == 1
    assert keys(await store.lexical_search("gearbox oil", 10, SearchFilters())) == [("kept", 0)]
    assert keys(await store.vector_search(vectors[0], 10, SearchFilters())) == [("kept", 0)]
    assert await store.lexical_search("gearbox", 10, SearchFilters(collection_ids=("id-a",))) == []
    assert await store.vector_search(vectors[0], 10, SearchFilters(collection_ids=("id-a",))) == []
    assert (await store.list_documents(offset=0, limit=10, collection_ids=["id-a"])).total == 0
    assert await store.check_integrity() == []
    assert await store.delete_collection("id-a") is False
    # the name can be used again, for a new, empty collection
    await store.create_collection(Collection("id-a2", "team-a", CREATED))
    assert counts(await store.list_collections())["id-a2"] == ("team-a", 0)


async def test_simultaneous_creates_of_one_name_leave_one_collection(store: Store) -> None:
    attempts = [store.create_collection(Collection(f"id-{n}", "racy", CREATED)) for n in range(4)]
    outcomes = await asyncio.gather(*attempts, return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, Collection)]
    assert len(winners) == 1 and all(isinstance(o, Conflict) for o in outcomes if o not in winners)
    assert [c.collection_id for c in await store.list_collections() if c.name == "racy"] == [winners[0].collection_id]


async def test_simultaneous_renames_to_one_name_leave_one_winner(store: Store) -> None:
    for n in range(3):
        await store.create_collection(Collection(f"id-{n}", f"c{n}", CREATED))
    outcomes = await asyncio.gather(
        *(store.rename_collection(f"id-{n}", "target") for n in range(3)), return_exceptions=True
    )
    assert sum(isinstance(o, Collection) for o in outcomes) == 1
    names = sorted(c.name for c in await store.list_collections())
    assert names.count("target") == 1 and len(names) == 4


async def test_wipe_keeps_the_collections_empty(store: Store) -> None:
    await store.create_collection(Collection("id-a", "team-a", CREATED))
    await write(store, in_collection(record("a", "a.txt"), "id-a"), ["words"])
    await store.wipe()
    assert counts(await store.list_collections()) == {
        DEFAULT_COLLECTION: (DEFAULT_COLLECTION, 0),
        "id-a": ("team-a", 0),
    }
    await write(store, in_collection(record("b", "b.txt"), "id-a"), ["words"], seed=unit_vectors(1, 0).size)


async def test_find_documents_is_scoped_to_the_given_collections(store: Store) -> None:
    await store.create_collection(Collection("id-a", "team-a", CREATED))
    await write(store, record("ab-default", "docs/guide.md", minutes=1), ["default guide"])
    await write(store, in_collection(record("ab-team-a", "docs/guide.md", minutes=2), "id-a"), ["team guide"])

    async def found(reference: str, collection_ids: tuple[str, ...] = ()) -> list[str]:
        page = await store.find_documents(reference, limit=10, collection_ids=collection_ids)
        return [d.document_id for d in page.items]

    assert await found("guide.md") == ["ab-team-a", "ab-default"], "the same file in two collections: both"
    assert await found("docs/guide.md", ("id-a",)) == ["ab-team-a"]
    assert await found("ab", (DEFAULT_COLLECTION,)) == ["ab-default"]
    assert await found("ab-team-a", (DEFAULT_COLLECTION,)) == [], "a document outside the collections is not found"

"""Where a PDF chunk is drawn on its pages (issue 28 part 2) on every store: kept with the chunk, read
back by chunk listings, left out of search hits; a SQLite store from before regions opens and reads."""

from __future__ import annotations

import sqlite3

from carrag.services.models import Chunk, SearchFilters
from carrag.services.positions import Region
from carrag.services.reindexing import Reindexer
from carrag.services.stores.base import Store
from carrag.services.stores.sqlite import SqliteStore
from tests.services.stores import test_store_contract as contract
from tests.services.stores.test_elasticsearch_reindex import HashingEmbedder
from tests.services.stores.test_store_contract import IDENTITY, record, unit_vectors

open_store = contract.open_store
store = contract.store

REGIONS = [Region(1, 0, 21, 50, 114, 537, 131), Region(2, 22, 40, 50, 50, 310, 66)]


def placed_chunks() -> list[Chunk]:
    text = "Check the engine oil when you refuel the truck"
    return [
        Chunk(0, text, 0, len(text), pages=[1, 2], regions=REGIONS),
        Chunk(1, "A chunk of a format without pages", len(text) + 1, len(text) + 34),
    ]


async def test_regions_are_kept_with_their_chunk_and_read_by_listings(store: Store) -> None:
    await store.write_document(record("manual", "manual.pdf", chunks=2), placed_chunks(), unit_vectors(2, 0), IDENTITY)

    listed = [listing.chunk for listing in await store.get_chunks("manual")]
    assert [chunk.regions for chunk in listed] == [REGIONS, []]


async def test_a_reindex_keeps_the_regions(store: Store) -> None:
    await store.write_document(record("manual", "manual.pdf", chunks=2), placed_chunks(), unit_vectors(2, 0), IDENTITY)

    status = await Reindexer(store, HashingEmbedder()).run()  # type: ignore[arg-type]
    assert status.state == "done", status
    assert [listing.chunk.regions for listing in await store.get_chunks("manual")] == [REGIONS, []]


async def test_searches_do_not_read_regions(store: Store) -> None:
    await store.write_document(record("manual", "manual.pdf", chunks=2), placed_chunks(), unit_vectors(2, 0), IDENTITY)

    hits = await store.lexical_search("engine oil", 5, SearchFilters())
    assert hits and hits[0].chunk.chunk_index == 0 and hits[0].chunk.regions == []
    nearest = await store.vector_search(unit_vectors(2, 0)[0], 1, SearchFilters())
    assert nearest[0].chunk.regions == []


async def test_a_store_from_before_regions_opens_and_reads(tmp_path) -> None:
    path = tmp_path / "old.db"
    first = SqliteStore(path)
    await first.open()
    text = "Tire pressure is 35 psi"
    await first.write_document(
        record("old", "old.pdf"), [Chunk(0, text, 0, len(text), [1])], unit_vectors(1, 1), IDENTITY
    )
    await first.close()
    with sqlite3.connect(path) as connection:  # as a store written before the column existed
        connection.execute("ALTER TABLE chunks DROP COLUMN regions")

    reopened = SqliteStore(path)
    await reopened.open()
    try:
        assert [listing.chunk.regions for listing in await reopened.get_chunks("old")] == [[]]
        await reopened.write_document(record("new", "new.pdf"), placed_chunks()[:1], unit_vectors(1, 2), IDENTITY)
        assert (await reopened.get_chunks("new"))[0].chunk.regions == REGIONS
        assert await reopened.check_integrity() == []
    finally:
        await reopened.close()

"""Listing documents (issue 14, item 7) on every store: sorted by creation time, file name or chunk
count in either order (ties by document id, stable across pages), and found by file name as a
case-insensitive substring or glob."""

from __future__ import annotations

from carrag.services.stores.base import Store
from tests.services.stores import test_store_contract as contract
from tests.services.stores.test_store_contract import record, write

# the contract suite's fixtures: a fresh store of each backend
open_store = contract.open_store
store = contract.store

# (document id, source id, chunk count): created in this order, one minute apart
DOCUMENTS = [
    ("d1", "manuals/Brakes.PDF", 3),
    ("d2", "notes/tyres.txt", 1),
    ("d3", "manuals/air-filter.pdf", 2),
    ("d4", "notes/Brake pads.md", 2),
]


async def fill(store: Store) -> None:
    for minute, (document_id, source_id, chunks) in enumerate(DOCUMENTS):
        await write(
            store,
            record(document_id, source_id, chunks=chunks, minutes=minute, tags=["all"]),
            [f"{document_id} text {i}" for i in range(chunks)],
        )


async def ids(store: Store, **options) -> list[str]:
    return [d.document_id for d in (await store.list_documents(offset=0, limit=10, **options)).items]


async def test_sorting_by_each_key_and_order(store: Store) -> None:
    await fill(store)
    assert await ids(store) == ["d4", "d3", "d2", "d1"]  # newest first, as before
    assert await ids(store, sort="created_at", order="asc") == ["d1", "d2", "d3", "d4"]
    assert await ids(store, sort="filename", order="asc") == ["d3", "d4", "d1", "d2"]  # case-insensitive
    assert await ids(store, sort="filename", order="desc") == ["d2", "d1", "d4", "d3"]
    assert await ids(store, sort="chunk_count", order="desc") == ["d1", "d3", "d4", "d2"]  # tie d3/d4 by id
    assert await ids(store, sort="chunk_count", order="asc") == ["d2", "d3", "d4", "d1"]


async def test_pages_follow_the_sort(store: Store) -> None:
    await fill(store)
    pages = [await store.list_documents(offset=offset, limit=2, sort="filename", order="asc") for offset in (0, 2, 4)]
    assert [[d.document_id for d in page.items] for page in pages] == [["d3", "d4"], ["d1", "d2"], []]
    assert {page.total for page in pages} == {4}


async def test_file_name_substring_and_glob_ignore_case(store: Store) -> None:
    await fill(store)
    assert await ids(store, filename="brake") == ["d4", "d1"]
    assert await ids(store, filename="BRAKE P") == ["d4"]
    assert await ids(store, filename="*.pdf", sort="filename", order="asc") == ["d3", "d1"]
    assert await ids(store, filename="t?res.*") == ["d2"]
    assert await ids(store, filename="[ab]*") == ["d4", "d3", "d1"]
    assert await ids(store, filename="brakes") == ["d1"]  # a substring, not the whole name
    assert await ids(store, filename="brakes") == await ids(store, filename="*Brakes*")
    assert await ids(store, filename="50% off") == []  # no pattern syntax of SQL or Lucene leaks through
    assert await ids(store, filename=".*") == []
    assert await ids(store, filename="[unclosed") == []
    page = await store.list_documents(offset=0, limit=1, filename="brake", tag="all")
    assert page.total == 2 and [d.document_id for d in page.items] == ["d4"]
    assert (await store.list_documents(offset=0, limit=5, filename="brake", tag="other")).total == 0

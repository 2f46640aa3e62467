"""The writer takes its own changes into the search indexes (`SearchIndexes.read_write`, `take_in`):
a search that follows a write finds the vectors' delta and the changed rows' index current and does
no catch-up under the lock every search takes (issue 29: that catch-up, the changed rows' analysis
above all, was most of a search's time while documents kept arriving)."""

from __future__ import annotations

import numpy as np

from carrag.services.models import SearchFilters
from carrag.services.stores.sqlite import SqliteStore
from tests.services.stores.test_sqlite import IDENTITY, chunks_of, record, vectors
from tests.services.stores.test_sqlite_indexes import head_of, opened

NO_FILTER = SearchFilters()


async def found(store: SqliteStore, question: str, vector: np.ndarray) -> tuple[list[str], list[str]]:
    lexical = [hit.chunk.document_id for hit in await store.lexical_search(question, 5, NO_FILTER)]
    semantic = [hit.chunk.document_id for hit in await store.vector_search(vector, 1, NO_FILTER)]
    return lexical, semantic


async def test_a_search_after_a_write_has_nothing_to_catch_up(tmp_path, monkeypatch) -> None:
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(3)
    await store.write_document(record("d0", "0.txt", chunks=1), chunks_of("ice floe"), matrix[:1], IDENTITY)
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)  # tantivy stays behind
    indexes = store.indexes

    await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal tusks"), matrix[1:2], IDENTITY)
    await store.delete_document("d0")
    head = head_of(path)
    assert indexes.vectors.applied_seq == head and indexes.changed.position == head, "the writer took them in"
    assert indexes.lexical_seq < head

    caught_up: list[str] = []
    monkeypatch.setattr(indexes.vectors, "apply", lambda *args: caught_up.append("vectors"))
    monkeypatch.setattr(indexes.changed, "apply", lambda *args: caught_up.append("changed rows"))
    monkeypatch.setattr(indexes.changed, "apply_counted", lambda *args: caught_up.append("changed rows"))
    assert await found(store, "narwhal", matrix[1]) == (["d1"], ["d1"])
    assert await found(store, "ice", matrix[0]) == ([], ["d1"]), "the deleted row is gone from both legs"
    assert caught_up == [], "no search caught anything up"
    await store.close()


async def test_a_write_the_indexes_missed_is_caught_up_by_the_next_search(tmp_path, monkeypatch) -> None:
    """The writer takes in only what follows the indexes' position: after a write it did not take in,
    the next writes leave the whole gap to a search, which catches it up as before."""
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(3)
    await store.write_document(record("d0", "0.txt", chunks=1), chunks_of("ice floe"), matrix[:1], IDENTITY)
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)
    take_in = store.indexes.take_in
    monkeypatch.setattr(store.indexes, "take_in", lambda written: None)
    await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal"), matrix[1:2], IDENTITY)
    monkeypatch.setattr(store.indexes, "take_in", take_in)
    await store.write_document(record("d2", "2.txt", chunks=1), chunks_of("walrus"), matrix[2:3], IDENTITY)
    assert store.indexes.vectors.applied_seq < head_of(path), "a gap: the writer left it to a search"

    assert await found(store, "narwhal", matrix[1]) == (["d1"], ["d1"])
    assert await found(store, "walrus", matrix[2]) == (["d2"], ["d2"])
    await store.close()


async def test_a_search_between_a_commit_and_its_take_in_uses_what_the_writer_read(tmp_path, monkeypatch) -> None:
    """Between the commit and `take_in` a search whose snapshot holds the write takes in what the
    writer read and analysed (it reads and analyses nothing itself); `take_in` then leaves the
    indexes as they are (the row waits once in the delta, its terms count once)."""
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(2)
    await store.write_document(record("d0", "0.txt", chunks=1), chunks_of("ice floe"), matrix[:1], IDENTITY)
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)
    indexes = store.indexes
    held: list[object] = []
    take_in = indexes.take_in
    monkeypatch.setattr(indexes, "take_in", held.append)
    await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal"), matrix[1:2], IDENTITY)
    analysed: list[object] = []
    monkeypatch.setattr(indexes.changed, "apply", lambda *args: analysed.append(args))  # a search's own catch-up
    assert await found(store, "narwhal", matrix[1]) == (["d1"], ["d1"])
    assert analysed == []
    indexes.vectors.wait_for_inserts(timeout=10)
    waiting, changed = indexes.vectors.waiting, len(indexes.changed)

    take_in(held[0])  # type: ignore[arg-type]
    assert (indexes.vectors.waiting, len(indexes.changed)) == (waiting, changed)
    assert await found(store, "narwhal", matrix[1]) == (["d1"], ["d1"])
    await store.close()

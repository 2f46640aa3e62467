"""The writer takes its own changes into the search indexes (`SearchIndexes.read_write`, `take_in`):
a search that follows a write finds the vectors' delta and the changed rows' index current and does
no catch-up under the lock every search takes (issue 29: that catch-up, the changed rows' analysis
above all, was most of a search's time while documents kept arriving)."""

from __future__ import annotations

from pathlib import Path

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


async def store_with_one_document(path: Path, rows: int, synced: bool = True) -> tuple[SqliteStore, np.ndarray]:
    """A store at ``path`` holding "ice floe" (document d0, the first of ``rows`` vectors), its indexes
    current when ``synced``."""
    store = await opened(path)
    matrix = vectors(rows)
    await store.write_document(record("d0", "0.txt", chunks=1), chunks_of("ice floe"), matrix[:1], IDENTITY)
    if synced:
        await store.sync_indexes()
    return store, matrix


async def test_a_search_after_a_write_has_nothing_to_catch_up(tmp_path, monkeypatch) -> None:
    path = tmp_path / "s.db"
    store, matrix = await store_with_one_document(path, 3)
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
    store, matrix = await store_with_one_document(path, 3)
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
    store, matrix = await store_with_one_document(path, 2)
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


async def test_a_write_that_committed_is_not_failed_by_taking_it_in(tmp_path, monkeypatch) -> None:
    """An error while the writer takes its rows in (after COMMIT) is logged, not raised: the document
    is stored, so the request must not fail; the write still counts and the next search catches the
    indexes up from the change log."""
    path = tmp_path / "s.db"
    store, matrix = await store_with_one_document(path, 2)

    def fails(*args: object) -> None:
        raise MemoryError("taking in")

    apply = store.indexes.vectors.apply
    monkeypatch.setattr(store.indexes.vectors, "apply", fails)
    writes = store._writes
    await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal tusks"), matrix[1:2], IDENTITY)
    assert store._writes == writes + 1
    monkeypatch.setattr(store.indexes.vectors, "apply", apply)
    assert await found(store, "narwhal", matrix[1]) == (["d1"], ["d1"])
    await store.close()


async def test_a_write_does_not_wait_for_indexes_held_by_a_long_rebuild(tmp_path, monkeypatch) -> None:
    """A committed write waits at most `TAKE_IN_WAIT` for the indexes' lock (a rebuild or a tantivy
    commit may hold it for minutes); its rows then reach the indexes through the next search."""
    import asyncio
    import threading

    from carrag.services.stores import search_indexes

    path = tmp_path / "s.db"
    store, matrix = await store_with_one_document(path, 2)
    monkeypatch.setattr(search_indexes, "TAKE_IN_WAIT", 0.01, raising=False)
    release = threading.Event()
    held = threading.Event()

    def hold() -> None:
        with store.indexes._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        write = store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal"), matrix[1:2], IDENTITY)
        await asyncio.wait_for(write, timeout=20)  # on a blocking take-in it returns only after `release`
        assert not release.is_set()
    finally:
        release.set()
        holder.join()
    assert await found(store, "narwhal", matrix[1]) == (["d1"], ["d1"])
    await store.close()


async def test_a_rolled_back_write_leaves_nothing_to_take_in(tmp_path) -> None:
    """What a write read before a failed COMMIT is discarded before its ROLLBACK, so no search takes it
    in, even when a later write's commit reaches the same positions."""
    path = tmp_path / "s.db"
    store, matrix = await store_with_one_document(path, 3, synced=False)
    indexes = store.indexes
    read_write = indexes.read_write

    def read_then_fail(connection, start):  # type: ignore[no-untyped-def]
        read_write(connection, start)
        assert indexes._committing is not None
        raise RuntimeError("the commit fails")

    indexes.read_write = read_then_fail  # type: ignore[method-assign]
    try:
        await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal"), matrix[1:2], IDENTITY)
    except RuntimeError:
        pass
    indexes.read_write = read_write  # type: ignore[method-assign]
    assert indexes._committing is None
    await store.write_document(record("d2", "2.txt", chunks=1), chunks_of("walrus"), matrix[2:3], IDENTITY)
    lexical, semantic = await found(store, "narwhal", matrix[1])
    assert lexical == [] and "d1" not in semantic, "the rolled-back document is in neither leg"
    assert await found(store, "walrus", matrix[2]) == (["d2"], ["d2"])
    await store.close()

"""The search indexes beside the SQLite file (tantivy BM25, usearch kNN) follow SQLite, the source of
truth: they are rebuilt when missing or stale, catch up with writes they did not see, and one
process at a time owns the store (a second one is refused with a clear error)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import SearchFilters
from carrag.services.stores import changed_rows, sqlite_index_catch_up, sqlite_search, vector_segments
from carrag.services.stores.search_indexes import SearchIndexes
from carrag.services.stores.sqlite import SqliteStore
from carrag.services.stores.sqlite_search import fts5_search
from carrag.services.stores.vector_segments import normalised
from tests.services.stores.test_sqlite import IDENTITY, chunks_of, record, vectors

NO_FILTER = SearchFilters()


async def opened(path: Path) -> SqliteStore:
    store = SqliteStore(path)
    await store.open()
    return store


async def documents_found(store: SqliteStore, question: str, vector: np.ndarray) -> tuple[list[str], list[str]]:
    lexical = [hit.chunk.document_id for hit in await store.lexical_search(question, 10, NO_FILTER)]
    semantic = [hit.chunk.document_id for hit in await store.vector_search(vector, 10, NO_FILTER)]
    return lexical, semantic


OTHER_PROCESS = textwrap.dedent(
    """
    import asyncio, sys
    import numpy as np
    from carrag.services.errors import DependencyUnavailable
    from carrag.services.stores.sqlite import SqliteStore
    from tests.services.stores.test_sqlite import IDENTITY, chunks_of, record

    async def main() -> int:
        store = SqliteStore(sys.argv[1])
        try:
            await store.open()
        except DependencyUnavailable as exc:
            print(exc.message, file=sys.stderr)
            return 3
        vector = np.array([[0.0, 0.0, 0.0, 1.0]], dtype=np.float32)
        await store.write_document(record("other", "other.txt", chunks=1), chunks_of("walrus tusks"), vector, IDENTITY)
        await store.close()
        return 0

    sys.exit(asyncio.run(main()))
    """
)


def run_other_process(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(path)], capture_output=True, text=True, timeout=120, check=False
    )


async def test_a_second_process_is_refused_then_its_writes_are_seen_after_the_first_closes(tmp_path) -> None:
    path = tmp_path / "s.db"
    store = await opened(path)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("engine oil"), vectors(1), IDENTITY)

    refused = run_other_process(path)
    assert refused.returncode == 3, refused.stderr
    assert "already open in another Carrag process" in refused.stderr
    assert f"pid {__import__('os').getpid()}" in refused.stderr
    with pytest.raises(DependencyUnavailable, match="another store object holds it"):
        await SqliteStore(path).open()
    await store.close()

    accepted = run_other_process(path)
    assert accepted.returncode == 0, accepted.stderr
    store = await opened(path)  # its indexes catch up with the other process's write
    lexical, semantic = await documents_found(store, "walrus", np.array([0, 0, 0, 1], dtype=np.float32))
    assert lexical == ["other"]
    assert semantic[0] == "other"
    assert await store.check_integrity() == []
    await store.close()


async def test_indexes_follow_writes_made_behind_their_back(tmp_path) -> None:
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(2)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("engine oil"), matrix[:1], IDENTITY)
    await store.write_document(record("d2", "b.txt", chunks=1), chunks_of("engine coolant"), matrix[1:], IDENTITY)
    assert sorted((await documents_found(store, "engine", matrix[0]))[0]) == ["d1", "d2"]
    await store.close()

    connection = sqlite3.connect(path, isolation_level=None)  # a tool (or an older Carrag) deletes d1
    connection.execute("PRAGMA foreign_keys = ON")
    connection.execute("DELETE FROM documents WHERE document_id = 'd1'")
    connection.close()

    store = await opened(path)
    lexical, semantic = await documents_found(store, "engine", matrix[0])
    assert lexical == ["d2"]
    assert semantic == ["d2"]
    await store.close()


async def test_missing_or_damaged_indexes_are_rebuilt(tmp_path) -> None:
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(3)
    for n in range(3):
        await store.write_document(
            record(f"d{n}", f"{n}.txt", chunks=1), chunks_of(f"topic{n} words"), matrix[n : n + 1], IDENTITY
        )
    await store.sync_indexes()
    await store.close()
    shutil.rmtree(store.indexes.directory)
    store = await opened(path)
    lexical, semantic = await documents_found(store, "topic1", matrix[1])
    assert lexical == ["d1"] and semantic[0] == "d1" and sorted(semantic) == ["d0", "d1", "d2"]
    await store.close()

    (store.indexes.directory / "vectors.json").write_text("{not json")
    (store.indexes.directory / "lexical.json").write_text("[]")
    store = await opened(path)
    lexical, semantic = await documents_found(store, "topic2", matrix[2])
    assert lexical == ["d2"] and semantic[0] == "d2"
    assert store.indexes.last_sync is not None and store.indexes.last_sync.action == "rebuilt"
    await store.close()


def backed_up(path: Path, backup: Path) -> Path:
    """A consistent copy of the store's file, as SQLite's online backup makes it."""
    source, target = sqlite3.connect(path), sqlite3.connect(backup)
    source.backup(target)
    source.close()
    target.close()
    return backup


async def test_an_older_copy_of_the_database_makes_the_indexes_rebuild(tmp_path) -> None:
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(2)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("alpha"), matrix[:1], IDENTITY)
    await store.close()
    backup = backed_up(path, tmp_path / "backup.db")
    store = await opened(path)
    await store.write_document(record("d2", "b.txt", chunks=1), chunks_of("alpha beta"), matrix[1:], IDENTITY)
    await store.sync_indexes()
    await store.close()

    shutil.copy(backup, path)  # restored from the backup: the indexes are ahead of the log
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store = await opened(path)
    lexical, semantic = await documents_found(store, "alpha", matrix[1])
    assert lexical == ["d1"] and semantic == ["d1"]
    await store.close()


async def test_wipe_starts_the_indexes_again(tmp_path) -> None:
    store = await opened(tmp_path / "s.db")
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("alpha"), vectors(1), IDENTITY)
    assert (await documents_found(store, "alpha", vectors(1)[0]))[0] == ["d1"]
    await store.wipe()
    assert await documents_found(store, "alpha", vectors(1)[0]) == ([], [])
    await store.write_document(record("d2", "b.txt", chunks=1), chunks_of("alpha"), vectors(1, 5), IDENTITY)
    assert await documents_found(store, "alpha", vectors(1, 5)[0]) == (["d2"], ["d2"])
    await store.close()


def exact_order(matrix: np.ndarray, live: np.ndarray, probe: np.ndarray, k: int) -> list[tuple[str, int]]:
    """(document, chunk index) of the ``k`` nearest live rows of ``matrix`` (3 chunks per document)."""
    nearest = live[np.argsort(-(matrix[live] @ probe / np.linalg.norm(probe)), kind="stable")[:k]]
    return [(f"d{i // 3}", i % 3) for i in nearest]


async def test_the_inserter_moves_the_delta_into_the_graph_and_results_stay_exact(tmp_path) -> None:
    store = await opened(tmp_path / "s.db")
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(300, 4)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    for n in range(100):  # 3 chunks per document, a search after every few writes
        await store.write_document(
            record(f"d{n}", f"{n}.txt", chunks=3), chunks_of("a", "b", "c"), matrix[3 * n : 3 * n + 3], IDENTITY
        )
        if n % 7 == 0:
            await store.vector_search(matrix[0], 5, NO_FILTER)
        if n % 10 == 0:
            await store.delete_document(f"d{n}")
    await store.sync_indexes()
    segments = store.indexes.vectors
    assert segments.wait_for_inserts(timeout=30) and segments.insert_error is None
    assert segments.graph is not None and len(segments.graph) == 270, "every live row, no deleted one"

    deleted = {f"d{n}" for n in range(0, 100, 10)}
    live = np.array([i for i in range(300) if f"d{i // 3}" not in deleted])
    for probe in rng.normal(size=(10, 4)).astype(np.float32):
        hits = await store.vector_search(probe, 5, NO_FILTER)
        assert [(h.chunk.document_id, h.chunk.chunk_index) for h in hits] == exact_order(matrix, live, probe, 5)
    await store.close()

    store = await opened(tmp_path / "s.db")  # the graph saved on close is reopened from disk
    graph = store.indexes.vectors.graph
    assert graph is not None and store.indexes.vectors.waiting == 0
    # a restored usearch index comes back with the library's defaults (64), not the store's
    assert (graph.expansion_search, graph.expansion_add) == (
        vector_segments.EXPANSION_SEARCH,
        vector_segments.EXPANSION_ADD,
    )
    hits = await store.vector_search(matrix[4], 1, NO_FILTER)
    assert (hits[0].chunk.document_id, hits[0].chunk.chunk_index) == ("d1", 1)
    await store.close()


async def test_rows_written_after_the_graph_was_saved_do_not_grow_a_searchs_over_fetch(tmp_path, monkeypatch) -> None:
    """Issue 29: every row changed since the last save used to be a tombstone the graph search had to
    over-fetch past. Removed rows now leave the graph itself, so it is asked for 2k whatever changed,
    and a replaced or deleted row is never a candidate, whether its new version is in the delta or
    already in the graph."""
    monkeypatch.setattr(vector_segments, "INSERT_BATCH", 4)
    path = tmp_path / "s.db"
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(600, 4)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    store = await opened(path)
    await store.write_documents(
        [
            (record(f"d{n}", f"{n}.txt", chunks=3), chunks_of("a", "b", "c"), matrix[3 * n : 3 * n + 3])
            for n in range(100)
        ],
        IDENTITY,
    )
    await store.close()  # saved: the graph holds 300 rows
    store = await opened(path)
    segments = store.indexes.vectors
    asked: list[int] = []
    search = segments.graph.search

    def counting(query, count, **options):
        asked.append(count)
        return search(query, count, **options)

    segments.graph.search = counting  # type: ignore[method-assign]

    for n in range(100, 200):  # new documents
        await store.write_document(
            record(f"d{n}", f"{n}.txt", chunks=3), chunks_of("a", "b", "c"), matrix[3 * n : 3 * n + 3], IDENTITY
        )
    for n in range(0, 100, 4):  # replaced: same source, changed vectors, new rowids
        changed = matrix[3 * n : 3 * n + 3] + 0.01
        await store.write_document(record(f"r{n}", f"{n}.txt", chunks=3), chunks_of("x", "y", "z"), changed, IDENTITY)
    for n in range(2, 100, 10):
        await store.delete_document(f"d{n}")
    await store.sync_indexes()

    for moment in ("new rows in the delta", "new rows in the graph"):
        if moment == "new rows in the graph":
            assert segments.wait_for_inserts(timeout=30)
        asked.clear()
        for probe in matrix[[0, 30, 33, 300, 555]]:
            candidates = segments.candidates(probe, 5)
            assert len(candidates) <= 15
            stored = stored_vectors(path)
            assert set(candidates) <= set(stored), f"{moment}: a replaced or deleted row came back"
            rowids = np.array(list(stored))
            exact = rowids[np.argsort(-(np.vstack(list(stored.values())) @ probe), kind="stable")[:5]]
            assert set(exact.tolist()) <= set(candidates)
        if moment == "new rows in the graph":
            assert set(asked) == {10}, f"{moment}: the graph is asked for 2k, whatever changed"
        else:  # and for as many more as rows wait to leave it, never `REMOVE_BATCH` or more
            assert all(10 <= count < 10 + vector_segments.REMOVE_BATCH for count in asked)
    await store.close()


def test_rows_leave_the_graph_in_batches_and_are_never_candidates_meanwhile(tmp_path, monkeypatch) -> None:
    """Issue 29 at 1M: usearch's next add after any removal rehashes its whole key table (~50 ms at 1M,
    under the lock). Removed with every write, replaced documents kept the searches waiting for that
    (kNN leg p50 52 ms while updating); now rows leave the graph in batches, and until then a search
    drops them from the graph's answer and asks it for as many more."""
    monkeypatch.setattr(vector_segments, "REMOVE_BATCH", 8)
    monkeypatch.setattr(vector_segments.VectorSegments, "_start_inserter", lambda self: None)
    segments = vector_segments.VectorSegments(tmp_path)
    matrix = vectors(40)
    segments.rebuild("e1", 40, 4, [(np.arange(1, 41), matrix)])
    graph = segments.graph
    removed: list[list[int]] = []
    asked: list[int] = []
    remove, search = graph.remove, graph.search
    graph.remove = lambda keys, **options: (removed.append(sorted(keys.tolist())), remove(keys, **options))[1]
    graph.search = lambda query, count, **options: (asked.append(count), search(query, count, **options))[1]

    segments.apply(41, np.array([41]), [(np.array([41]), vectors(1, 1))], 4)  # a new row: not in the graph
    assert segments.candidates(matrix[0], 3)[0] == 1 and asked == [6]
    for rowid in range(1, 8):  # seven writes, each deleting one row of the graph
        segments.apply(41 + rowid, np.array([rowid]), [], 4)
        found = segments.candidates(matrix[rowid - 1], 3)
        assert not set(found) & set(range(1, rowid + 1)), "a deleted row is never a candidate"
        assert asked[-1] == 6 + rowid and len(found) <= 6 + 3
    assert removed == [] and len(graph) == 40

    segments.apply(49, np.array([8]), [], 4)  # the eighth: the batch leaves the graph together
    assert removed == [list(range(1, 9))] and len(graph) == 32
    segments.candidates(matrix[0], 3)
    assert asked[-1] == 6


def test_a_rowid_sqlite_gives_out_again_leaves_the_graph_before_its_new_vector_enters(tmp_path) -> None:
    """SQLite may reuse the rowid of the last row deleted (INTEGER PRIMARY KEY without AUTOINCREMENT):
    its old vector, still waiting to leave the graph, goes before the new one is added, also when
    more rows wait behind it (the inserter removes the leaving rows by itself only once the delta is
    empty; without this usearch refuses the duplicate key and the inserter stops)."""
    segments = vector_segments.VectorSegments(tmp_path)
    matrix = vectors(10)
    segments.rebuild("e1", 10, 4, [(np.arange(1, 11), matrix)])
    replacement = -matrix[9:10]
    rowids = np.arange(10, 17)  # 10 given out again, then six new rows in the same write
    segments.apply(18, rowids, [(rowids, np.vstack([replacement, vectors(6, seed=1)]))], 4)
    assert segments.candidates(matrix[9], 1)[:1] != [10], "its old vector is not found"
    assert segments.wait_for_inserts(timeout=30) and segments.insert_error is None
    assert len(segments.graph) == 16 and segments.graph.count(10) == 1
    assert segments.candidates(replacement[0], 1)[0] == 10
    assert segments.candidates(matrix[9], 1)[0] != 10
    segments.close()


def test_a_graph_saved_while_rows_wait_to_leave_it_is_saved_without_them(tmp_path, monkeypatch) -> None:
    """The saved position covers the changes that made rows leave the graph, so they must be out of
    the file it is saved with: opening does not replay those changes."""
    monkeypatch.setattr(vector_segments.VectorSegments, "_start_inserter", lambda self: None)
    segments = vector_segments.VectorSegments(tmp_path)
    matrix = vectors(10)
    segments.rebuild("e1", 10, 4, [(np.arange(1, 11), matrix)])
    segments.apply(11, np.array([3, 7]), [], 4)  # deleted: fewer than `REMOVE_BATCH`, still in the graph
    assert len(segments.graph) == 10
    segments.close()
    reopened = vector_segments.VectorSegments(tmp_path)
    assert reopened.load("e1") and reopened.applied_seq == 11
    assert len(reopened.graph) == 8 and not reopened.graph.contains(np.array([3, 7])).any()
    assert not {3, 7} & set(reopened.candidates(matrix[2], 3) + reopened.candidates(matrix[6], 3))
    reopened.close()


def test_a_rebuild_keeps_no_row_waiting_to_leave_the_graph_it_replaces(tmp_path, monkeypatch) -> None:
    """Rows leaving the old graph are keys of that graph: kept, they would be dropped from the new
    graph's answers and removed from it with the next batch, though the new graph holds them live."""
    monkeypatch.setattr(vector_segments.VectorSegments, "_start_inserter", lambda self: None)
    segments = vector_segments.VectorSegments(tmp_path)
    matrix = vectors(10)
    segments.rebuild("e1", 10, 4, [(np.arange(1, 11), matrix)])
    replaced = matrix.copy()
    replaced[2] = -matrix[2]
    segments.apply(11, np.array([3]), [(np.array([3]), replaced[2:3])], 4)  # row 3 leaves the old graph
    segments.rebuild("e1", 11, 4, [(np.arange(1, 11), replaced)])  # e.g. a backlog too large to replay
    assert len(segments.graph) == 10 and segments.graph.contains(np.array([3]))[0]
    assert segments.candidates(replaced[2], 1)[0] == 3
    segments.close()


def test_a_graph_saved_while_rows_wait_is_replayed_from_before_them(tmp_path, monkeypatch) -> None:
    """A save during ingestion (every `save_interval` changes) may find rows still in the delta; the
    position saved must come before every change they came from, so opening replays them all (a bug
    saved the head of their catch-up less one: the catch-up's other changes were lost)."""
    monkeypatch.setattr(vector_segments.VectorSegments, "_start_inserter", lambda self: None)
    segments = vector_segments.VectorSegments(tmp_path)
    segments.rebuild("e1", 10, 4, [(np.arange(1, 11), vectors(10))])
    rowids = np.arange(11, 41)
    segments.apply(70, rowids, [(rowids, vectors(30, 3))], 4)  # one catch-up of changes 11..70
    with segments._lock:
        segments._save()  # as the inserter's periodic save would, with all 30 rows waiting

    reopened = vector_segments.VectorSegments(tmp_path)
    assert reopened.load("e1") and reopened.applied_seq == 10, "changes 11..70 are replayed"
    assert len(reopened.graph) == 10


def stored_vectors(path: Path) -> dict[int, np.ndarray]:
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute("SELECT id, embedding FROM chunks").fetchall()
    finally:
        connection.close()
    return {rowid: normalised(np.frombuffer(blob, np.float32)[None])[0] for rowid, blob in rows}


def change_log(path: Path) -> tuple[int, int, int]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT min(seq), max(seq), count(*) FROM chunk_changes").fetchone()
    finally:
        connection.close()


async def test_the_change_log_is_pruned_below_what_both_indexes_saved(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(vector_segments, "SAVE_EVERY", 10)
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(40, 7)
    for n in range(30):
        await store.write_document(
            record(f"d{n}", f"{n}.txt", chunks=1), chunks_of(f"w{n}"), matrix[n : n + 1], IDENTITY
        )
        if n % 4 == 0:
            await store.vector_search(matrix[0], 3, NO_FILTER)
    await store.sync_indexes()
    assert store.indexes.vectors.wait_for_inserts(timeout=30)
    await store.sync_indexes()
    store._writer.submit(lambda: None).result()  # the prune queued on the writer has run
    durable = store.indexes.durable_seq()
    assert durable > 10, "the inserter saved the graph past the first changes"
    low, high, rows = change_log(path)
    assert low == durable and rows == high - durable + 1, "only the changes after the saved graph are left"
    await store.write_document(record("late", "late.txt", chunks=1), chunks_of("late"), matrix[30:31], IDENTITY)
    await store.close()
    connection = sqlite3.connect(path, isolation_level=None)  # a change made behind the store's back
    connection.execute("PRAGMA foreign_keys = ON")
    connection.execute("DELETE FROM documents WHERE document_id = 'd29'")
    connection.close()

    store = await opened(path)  # the change is replayed from what the log still holds
    assert store.indexes.last_sync is not None and store.indexes.last_sync.action == "caught-up"
    assert (await store.vector_search(matrix[0], 1, NO_FILTER))[0].chunk.document_id == "d0"
    assert (await store.vector_search(matrix[29], 1, NO_FILTER))[0].chunk.document_id != "d29"
    assert (await store.vector_search(matrix[30], 1, NO_FILTER))[0].chunk.document_id == "late"
    assert [h.chunk.document_id for h in await store.lexical_search("late", 3, NO_FILTER)] == ["late"]
    assert await store.lexical_search("w29", 3, NO_FILTER) == []
    await store.close()


def test_replaying_changes_twice_leaves_the_same_index(tmp_path) -> None:
    """A crash between an index commit and its saved watermark replays changes: harmless."""
    connection = sqlite3.connect(tmp_path / "raw.db", isolation_level=None)
    from carrag.services.stores.sqlite import SCHEMA

    connection.executescript(SCHEMA)
    connection.execute("INSERT INTO meta VALUES ('index_epoch', 'e1'), ('embedding_dimension', '4')")
    connection.execute(
        "INSERT INTO documents(document_id, source_id, filename, source_type, content_hash, chunk_count, tags,"
        " metadata, title, external_id, created_at)"
        " VALUES ('d1', 's1', 'f', 'text', 'h', 1, '[]', '{}', NULL, NULL, '2026-01-01')"
    )
    connection.execute(
        "INSERT INTO chunks(chunk_id, document_id, chunk_index, text, char_start, char_end, pages, embedding)"
        " VALUES ('c1', 'd1', 0, 'walrus', 0, 6, '[]', ?)",
        (vectors(1)[0].tobytes(),),
    )
    indexes = SearchIndexes(tmp_path / "indexes")
    indexes.sync(connection)
    indexes.lexical_seq = 0  # as if the watermark had not been saved
    indexes.vectors.applied_seq = 0
    indexes.sync(connection)
    assert indexes.lexical.document_count == 1
    assert indexes.lexical.view is not None and indexes.lexical.view.search(["walrus"], 5)[0][0] == 1
    assert indexes.vectors.candidates(vectors(1)[0], 5) == [1]
    indexes.close()


async def test_words_the_analyzer_splits_are_searched_as_separate_terms(tmp_path) -> None:
    """Regression: "covid_19" is one query word but two tokens; as a quoted tantivy phrase it failed
    with "field does not have positions indexed" (the SciFact eval hit it)."""
    store = await opened(tmp_path / "s.db")
    await store.write_document(
        record("d1", "a.txt", chunks=1), chunks_of("covid 19 outcomes in cafés"), vectors(1), IDENTITY
    )
    await store.sync_indexes()
    for question in ("covid_19 outcomes", "CAFÉ", "α-synuclein_x 19"):
        hits = await store.lexical_search(question, 5, NO_FILTER)
        assert [h.chunk.document_id for h in hits] == ["d1"], question
    assert store.indexes.lexical_seq >= 0, "tantivy answered, not the FTS5 fallback"
    await store.close()


def head_of(path: Path) -> int:
    return change_log(path)[1]


async def test_a_bm25_search_scores_the_rows_tantivy_has_not_caught_up_with_apart(tmp_path, monkeypatch) -> None:
    """Issue 29: a search never waits for a tantivy commit. Tantivy answers as last published, its
    copies of rows changed since are left out, and those rows are scored by the changed rows' index."""
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(12)
    for n in range(4, 12):  # other words: "walrus" stays a rare term, so both parts weigh it alike
        await store.write_document(
            record(f"f{n}", f"f{n}.txt", chunks=1), chunks_of(f"ice floe {n}"), matrix[n : n + 1], IDENTITY
        )
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("walrus tusks"), matrix[:1], IDENTITY)
    await store.write_document(record("d2", "b.txt", chunks=1), chunks_of("walrus"), matrix[1:2], IDENTITY)
    await store.write_document(record("d0", "z.txt", chunks=1), chunks_of("a walrus on ice"), matrix[3:4], IDENTITY)
    await store.sync_indexes()
    position = store.indexes.lexical_seq
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)  # tantivy stays where it is

    await store.write_document(
        record("d3", "c.txt", chunks=1), chunks_of("walrus walrus colony"), matrix[2:3], IDENTITY
    )
    await store.write_document(record("d1b", "a.txt", chunks=1), chunks_of("seal pups"), matrix[:1], IDENTITY)
    await store.delete_document("d2")
    for _ in range(2):  # tantivy behind, then caught up: the same answers
        assert [h.chunk.document_id for h in await store.lexical_search("walrus", 5, NO_FILTER)] == ["d3", "d0"]
        assert [h.chunk.document_id for h in await store.lexical_search("seal", 5, NO_FILTER)] == ["d1b"]
        assert [h.chunk.document_id for h in await store.lexical_search("tusks", 5, NO_FILTER)] == []
        assert store.indexes.lexical_seq == position, "no search committed tantivy"
        await store.sync_indexes()
        position = head_of(path)
    await store.close()


async def test_a_retitled_old_row_is_scored_apart_until_tantivy_catches_up(tmp_path, monkeypatch) -> None:
    """A retitle changes rows in place (an old, low rowid), not at the table's tail."""
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(6)
    await store.write_document(record("old", "old.txt", chunks=1), chunks_of("ice floe"), matrix[:1], IDENTITY)
    for n in range(1, 6):
        await store.write_document(
            record(f"f{n}", f"f{n}.txt", chunks=1), chunks_of(f"seal {n}"), matrix[n : n + 1], IDENTITY
        )
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)  # tantivy stays where it is
    position = store.indexes.lexical_seq

    await store.update_metadata("old", title="Walrus haul-out")
    await store.write_document(record("new", "new.txt", chunks=1), chunks_of("seal colony"), matrix[1:2], IDENTITY)
    assert [h.chunk.document_id for h in await store.lexical_search("walrus", 5, NO_FILTER)] == ["old"]
    assert "new" in [h.chunk.document_id for h in await store.lexical_search("seal", 10, NO_FILTER)]
    assert store.indexes.lexical_seq == position, "no search committed tantivy"
    await store.close()


async def test_a_filtered_bm25_search_goes_to_fts5_and_sees_every_committed_write(tmp_path, monkeypatch) -> None:
    store = await opened(tmp_path / "s.db")
    matrix = vectors(3)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("walrus tusks"), matrix[:1], IDENTITY)
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)  # tantivy stays where it is
    await store.write_document(record("d2", "b.txt", chunks=1), chunks_of("walrus colony"), matrix[1:2], IDENTITY)

    def not_tantivy(words: object) -> None:
        raise AssertionError("a filtered search does not read tantivy or the changed rows")

    monkeypatch.setattr(store.indexes, "lexical_view", not_tantivy)
    only_d2 = SearchFilters(document_ids=("d2",))
    assert [h.chunk.document_id for h in await store.lexical_search("walrus", 5, only_d2)] == ["d2"]
    await store.close()


def test_a_search_skipping_changed_rows_still_returns_k_hits(tmp_path) -> None:
    from carrag.services.stores.lexical_index import LexicalIndex

    index = LexicalIndex(tmp_path / "lexical")
    index.open(reset=True)
    index.replace((), ((rowid, "walrus " * (12 - rowid)) for rowid in range(1, 12)))
    index.publish(index.commit())
    assert index.view is not None
    hits = index.view.search(["walrus"], 3, skip={1, 2, 3, 4, 5})
    assert [rowid for rowid, _ in hits] == [6, 7, 8]
    index.close()


async def test_tantivy_catches_up_in_the_background_without_holding_up_searches(tmp_path, monkeypatch) -> None:
    """The catch-up commits tantivy (100-500 ms at 100k chunks under load) outside the indexes' lock,
    so neither leg waits for it, and publishes the new snapshot only once it is complete."""
    path = tmp_path / "s.db"
    store = await opened(path)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("walrus"), vectors(1), IDENTITY)
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)
    await store.write_document(record("d2", "b.txt", chunks=1), chunks_of("walrus tusks"), vectors(1, 4), IDENTITY)
    indexes, lexical = store.indexes, store.indexes.lexical
    committing, release = threading.Event(), threading.Event()
    commit = lexical.commit

    def slow_commit():
        committing.set()
        assert release.wait(10)
        return commit()

    monkeypatch.setattr(lexical, "commit", slow_commit)
    with ThreadPoolExecutor(max_workers=1) as pool:
        catching_up = pool.submit(lambda: indexes.catch_up_lexical(store._connection()))
        assert committing.wait(10)
        semantic = await asyncio.wait_for(store.vector_search(vectors(1, 4)[0], 1, NO_FILTER), timeout=5)
        found = await asyncio.wait_for(store.lexical_search("tusks", 5, NO_FILTER), timeout=5)
        assert indexes.lexical_seq < head_of(path), "not published before its commit is done"
        release.set()
        catching_up.result(timeout=10)
    assert [h.chunk.document_id for h in semantic] == [h.chunk.document_id for h in found] == ["d2"]
    assert indexes.lexical_seq == head_of(path)
    assert [h.chunk.document_id for h in await store.lexical_search("tusks", 5, NO_FILTER)] == ["d2"]
    await store.close()


async def test_writes_that_never_pause_still_catch_tantivy_up(tmp_path, monkeypatch) -> None:
    """The catch-up runs once writes pause, and at least every `INDEX_SYNC_MAX_WAIT_SECONDS` while
    they go on, which bounds the rows a search has to score apart."""
    monkeypatch.setattr(sqlite_index_catch_up, "INDEX_SYNC_IDLE_SECONDS", 0.5)
    monkeypatch.setattr(sqlite_index_catch_up, "INDEX_SYNC_MAX_WAIT_SECONDS", 0.2)
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(200)
    first = store.indexes.lexical_seq
    for n in range(200):  # a write every 0.05 s: never a pause of 0.5 s
        await store.write_document(
            record(f"d{n}", f"{n}.txt", chunks=1), chunks_of(f"w{n}"), matrix[n : n + 1], IDENTITY
        )
        if store.indexes.lexical_seq > first:
            break
        await asyncio.sleep(0.05)
    assert store.indexes.lexical_seq > first, "caught up while the writes went on"
    await store.close()


async def test_closing_takes_in_the_writes_a_catch_up_was_waiting_for(tmp_path) -> None:
    path = tmp_path / "s.db"
    store = await opened(path)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("walrus"), vectors(1), IDENTITY)
    await store.close()  # before the catch-up's idle wait is over
    directory = path.with_name(path.name + ".indexes")
    for state in ("lexical.json", "vectors.json"):
        assert json.loads((directory / state).read_text())["seq"] == head_of(path), state


async def test_rows_written_after_restoring_an_older_file_are_found_before_tantivy_catches_up(
    tmp_path, monkeypatch
) -> None:
    """The rebuild after a restore kept the changed rows' index at the newer file's position, above the
    restored head: rows written next were left out of it, and BM25 missed them until tantivy caught up."""
    path = tmp_path / "store.db"
    matrix = vectors(6)
    store = await opened(path)
    await store.write_document(record("d1", "a.txt", chunks=1), chunks_of("alpha"), matrix[:1], IDENTITY)
    await store.close()
    backup = backed_up(path, tmp_path / "backup.db")
    store = await opened(path)
    for n in range(2, 5):
        chunks = chunks_of(f"beta {n}")
        await store.write_document(record(f"d{n}", f"{n}.txt", chunks=1), chunks, matrix[n : n + 1], IDENTITY)
    await store.sync_indexes()
    await store.close()
    shutil.copy(backup, path)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)

    store = await opened(path)
    try:
        await store.lexical_search("alpha", 5, NO_FILTER)  # rebuilds the indexes for the restored file
        monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)  # tantivy stays behind
        await store.write_document(record("g", "g.txt", chunks=1), chunks_of("gamma"), matrix[5:6], IDENTITY)
        assert [hit.chunk.document_id for hit in await store.lexical_search("gamma", 5, NO_FILTER)] == ["g"]
    finally:
        await store.close()


def test_a_search_never_adds_to_the_graph_and_the_writer_waits_for_room(tmp_path, monkeypatch) -> None:
    """Issue 29 at 1M: with the delta full, a search's catch-up added each write's rows to the graph
    itself, under the lock every search takes (p50 188 ms). Now the catch-up only fills the delta,
    and the writer is the one that waits until the inserter has made room."""
    monkeypatch.setattr(vector_segments, "DELTA_LIMIT", 10)
    held = threading.Event()  # the inserter starts adding only once this is set
    insert = vector_segments.VectorSegments._insert

    def held_insert(self: vector_segments.VectorSegments) -> None:
        held.wait()
        insert(self)

    monkeypatch.setattr(vector_segments.VectorSegments, "_insert", held_insert)
    segments = vector_segments.VectorSegments(tmp_path)
    segments.rebuild("e1", 10, 4, [(np.arange(1, 11), vectors(10))])
    matrix = vectors(30, 3)
    rowids = np.arange(11, 41)
    segments.apply(40, rowids, [(rowids, matrix)], 4)  # a search's catch-up, 3x the limit
    assert len(segments.graph) == 10 and segments.waiting == 30, "nothing was added to the graph"
    assert 40 in segments.candidates(matrix[-1], 1), "the rows are searched in the delta"

    writer = threading.Thread(target=segments.wait_for_room)
    writer.start()
    writer.join(0.2)
    assert writer.is_alive(), "the writer waits while the delta is full"
    held.set()
    writer.join(30)
    assert not writer.is_alive() and segments.waiting < 10
    assert segments.wait_for_inserts(timeout=30) and len(segments.graph) == 40
    segments.close()


def test_the_delta_counts_and_takes_its_rows_in_log_order() -> None:
    delta = vector_segments._Delta.empty(4)
    delta.add(np.arange(1, 6), vectors(5), seq=10)
    delta.add(np.arange(6, 9), vectors(3, 2), seq=20)
    delta.remove(np.array([1, 2, 4, 7]))
    assert delta.live_count == 4 and delta.first_seq() == 10
    taken, _ = delta.take(2)
    assert taken.tolist() == [3, 5] and delta.live_count == 2 and delta.first_seq() == 20
    delta.remove(np.array([6]))
    taken, _ = delta.take(5)
    assert taken.tolist() == [8] and delta.live_count == 0 and delta.first_seq() is None


async def test_the_background_catch_up_never_commits_tantivy_under_the_searches_lock(tmp_path, monkeypatch) -> None:
    """Writes that came after `catch_up_lexical`'s snapshot were committed to tantivy by the vectors'
    catch-up that follows it, under the lock every search takes (100-500 ms a commit, each second
    of a stream of writes). They wait for the next background catch-up instead; searches find
    them meanwhile in the changed rows' index."""
    store = await opened(tmp_path / "s.db")
    await store.write_document(record("d0", "0.txt", chunks=1), chunks_of("walrus"), vectors(1), IDENTITY)
    await store.sync_indexes()
    indexes = store.indexes
    commits_under_lock: list[bool] = []
    commit = indexes.lexical.commit

    def recording_commit():
        commits_under_lock.append(indexes._lock.locked())
        return commit()

    monkeypatch.setattr(indexes.lexical, "commit", recording_commit)
    monkeypatch.setattr(indexes, "catch_up_lexical", lambda connection: None)  # the write came after it
    await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("narwhal"), vectors(1, 1), IDENTITY)
    await asyncio.to_thread(store._index_catch_up._background_sync)
    assert commits_under_lock == [] and indexes.vectors.applied_seq > indexes.lexical_seq
    assert [hit.chunk.document_id for hit in await store.lexical_search("narwhal", 5, NO_FILTER)] == ["d1"]
    await store.close()


async def test_past_its_limit_the_changed_rows_index_empties_and_fts5_answers_until_tantivy_catches_up(
    tmp_path, monkeypatch
) -> None:
    """If tantivy's catch-up keeps failing, the rows changed after its position would pile up in
    memory without end. Past `changed_rows.LIMIT` the index holds none, BM25 searches go to FTS5
    (current in every snapshot), and tantivy takes over again once it has published past that point."""
    monkeypatch.setattr(changed_rows, "LIMIT", 3)
    path = tmp_path / "s.db"
    store = await opened(path)
    matrix = vectors(8)
    await store.write_document(record("d0", "0.txt", chunks=1), chunks_of("ice floe"), matrix[:1], IDENTITY)
    await store.sync_indexes()
    monkeypatch.setattr(store._index_catch_up, "schedule", lambda: None)  # tantivy stays where it is
    fts5_searches = []
    monkeypatch.setattr(sqlite_search, "fts5_search", lambda *args: fts5_searches.append(args) or fts5_search(*args))

    await store.write_document(record("d1", "1.txt", chunks=1), chunks_of("walrus tusks"), matrix[1:2], IDENTITY)
    assert [h.chunk.document_id for h in await store.lexical_search("walrus", 5, NO_FILTER)] == ["d1"]
    assert fts5_searches == [] and len(store.indexes.changed) == 1
    for n in range(2, 6):
        await store.write_document(
            record(f"d{n}", f"{n}.txt", chunks=1), chunks_of(f"walrus {n}"), matrix[n : n + 1], IDENTITY
        )
    found = [h.chunk.document_id for h in await store.lexical_search("tusks", 5, NO_FILTER)]
    assert found == ["d1"] and len(fts5_searches) == 1, "FTS5 answered"
    assert len(store.indexes.changed) == 0, "the index holds nothing past its limit"

    await store.sync_indexes()  # tantivy publishes past the overflow: searches go back to it
    assert [h.chunk.document_id for h in await store.lexical_search("tusks", 5, NO_FILTER)] == ["d1"]
    assert len(fts5_searches) == 1
    await store.close()

"""Keeping the search indexes beside the SQLite file in step with it (SQLite stays the truth).

SQLite records every chunk insert and delete in ``chunk_changes`` (triggers, so in the same
transaction as the change itself) and a random ``index_epoch`` in ``meta`` that `wipe` renews.
Each index remembers the epoch and the last change it has applied (its watermark, saved with it).
Before a search, `sync` reads the head of the log in a read transaction and brings both indexes
to it:

- same epoch, watermark = head: nothing to do (one indexed read per search);
- same epoch, behind by a few changes: for each rowid touched since the watermark, drop it from
  the index and add it back as SQLite has it at the head (gone if deleted) — replaying twice gives
  the same result, so a crash between an index's commit and its watermark is harmless;
- another epoch, a missing or unreadable index, a head *behind* the watermark (an older copy of
  the database), or a backlog past `REBUILD_BACKLOG` and half the index (a bulk load): rebuild
  from every chunk row, streamed (the vectors go straight into the graph, never all in RAM).

A committed write therefore means what it meant before: the indexes can only lag, and a search
sees them as of its snapshot. Writes never touch the indexes (nothing global is rebuilt per
document). A search catches the vectors up itself (they go to the graph's exact delta: cheap), but
never waits for a tantivy commit (100–500 ms): tantivy is caught up in the background
(`sqlite_index_catch_up.py`), off the searches' lock, and a search takes it as last published
beside the rows changed after its position, which a search catches up itself into a small
in-memory index (`changed_rows.py`) and a publication of tantivy drops.

What a search would catch up, the writer does first: inside its transaction it reads the rows it
changed and analyses their text (`read_write`), outside the lock, and right after its commit it
takes them into the vectors' delta and the changed rows' index (`take_in`). A search whose snapshot
holds that commit before then takes in what the writer read (`_sync_locked`), so no search reads or
analyses rows a write has just added: they hold the lock only for their own look.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from carrag.services.stores import changed_rows
from carrag.services.stores.changed_rows import ChangedRows, ChangedTerms, CountedRows
from carrag.services.stores.lexical_index import LexicalIndex, LexicalView, indexed_text
from carrag.services.stores.memory import release_freed_memory
from carrag.services.stores.vector_segments import VectorSegments

R = TypeVar("R")
T = TypeVar("T")

REBUILD_BACKLOG = 20_000  # changes; past this and half the indexed rows, a full scan beats lookups
TAKE_IN_WAIT = 0.05  # seconds a committed write waits for the indexes before leaving its rows to the searches
SCAN_BATCH = 5_000
LOOKUP_BATCH = 900  # rowids per IN (...) list


@dataclass(slots=True)
class SyncReport:
    action: str  # "current", "caught-up", "rebuilt"
    changes: int
    seconds: float


@dataclass(slots=True)
class WrittenChanges:
    """A write's changes, as the indexes take them in (`SearchIndexes.read_write`)."""

    epoch: str
    start: int  # the change-log head before the write
    head: int  # ... and after it
    dimension: int
    touched: np.ndarray  # every rowid it changed
    vectors: tuple[np.ndarray, np.ndarray]  # the (rowids, vectors) of those that exist
    changed: CountedRows  # the changed rows' texts, analysed


class SearchIndexes:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.lexical = LexicalIndex(directory / "lexical")
        self.vectors = VectorSegments(directory)
        self.changed = ChangedRows(self.lexical.analyze)  # the rows changed after `lexical_seq`
        self._lexical_state = directory / "lexical.json"
        self._lock = threading.Lock()  # the indexes as searches see them
        # The tantivy writer, one user at a time. Taken inside `_lock` or alone, never the other
        # way round: the background catch-up commits holding it and publishes under `_lock` after.
        self._lexical_writing = threading.Lock()
        self.epoch: str | None = None
        self.lexical_seq = -1
        self.last_sync: SyncReport | None = None
        self._committing: WrittenChanges | None = None  # a write's changes, read for its commit (`read_write`)

    # --- reading SQLite ------------------------------------------------------------------------
    @staticmethod
    def _head(connection: sqlite3.Connection) -> tuple[str, int]:
        epoch = connection.execute("SELECT value FROM meta WHERE key = 'index_epoch'").fetchone()
        head = connection.execute("SELECT coalesce(max(seq), 0) FROM chunk_changes").fetchone()[0]
        return (epoch[0] if epoch else ""), int(head)

    @staticmethod
    def _dimension(connection: sqlite3.Connection) -> int:
        row = connection.execute("SELECT value FROM meta WHERE key = 'embedding_dimension'").fetchone()
        return int(row[0]) if row else 0

    def is_current(self, connection: sqlite3.Connection) -> bool:
        epoch, head = self._head(connection)
        return epoch == self.epoch and head == self.lexical_seq == self.vectors.applied_seq

    # --- the protocol --------------------------------------------------------------------------
    def _newest(self) -> int:
        return max(self.lexical_seq, self.vectors.applied_seq)

    def sync(self, connection: sqlite3.Connection, include_lexical: bool = True) -> SyncReport | None:
        """Bring both indexes to the head of SQLite's change log (no-op when they are there);
        ``include_lexical`` False: the vectors only, tantivy where `catch_up_lexical` left it (its
        commit would hold up every search: the rows after it are searched apart meanwhile)."""
        if self.is_current(connection):
            return None
        with self._lock:
            connection.execute("BEGIN")  # one snapshot: the head and the rows it describes
            try:
                return self._sync_locked(connection, include_lexical)
            finally:
                connection.execute("COMMIT")

    def log_head(self, connection: sqlite3.Connection) -> int:
        return self._head(connection)[1]

    def read_write(self, connection: sqlite3.Connection, start: int) -> WrittenChanges | None:
        """What the writer's transaction changed after ``start`` (its head before the write), read and
        analysed in that transaction, before commit and outside the lock; None when there is nothing
        to take in, the vectors are not at ``start`` (a search catches up the whole gap) or the
        write is a bulk one (`REBUILD_BACKLOG` changes: searches and the background catch-up
        take it in as before)."""
        epoch, head = self._head(connection)
        if not start < head <= start + REBUILD_BACKLOG or epoch != self.epoch or self.vectors.applied_seq != start:
            return None
        touched = _changed_rowids(connection, start, head)
        dimension = self._dimension(connection)
        parts = list(_batches(connection, touched, dimension))
        vectors = (
            (np.concatenate([rowids for rowids, _ in parts]), np.vstack([matrix for _, matrix in parts]))
            if parts
            else _vectors_of([], dimension)
        )
        texts = _changed_texts(connection, start, head, changed_rows.LIMIT)
        if texts is None:
            return None
        self._committing = WrittenChanges(epoch, start, head, dimension, touched, vectors, self.changed.counted(texts))
        return self._committing

    def take_in(self, written: WrittenChanges) -> None:
        """After the commit of ``written``: its changes into the indexes, unless a search whose snapshot
        held the commit took them in first (`_sync_locked`). The write has committed, so it waits at
        most `TAKE_IN_WAIT` for the lock (a rebuild or a tantivy commit may hold it for seconds): past
        that, the next search takes them in from `_committing`, or from the change log."""
        if not self._lock.acquire(timeout=TAKE_IN_WAIT):
            return
        try:
            if self._committing is written:
                self._committing = None
            self._take_in(written)
        finally:
            self._lock.release()

    def discard_write(self) -> None:
        """The writer's transaction rolls back: what it read must never be taken in. Called before the
        ROLLBACK, while the writer still holds the database, so no other commit can reach the
        positions it read."""
        self._committing = None

    def _take_in(self, written: WrittenChanges) -> None:
        """Into the vectors' delta and the changed rows' index, each only if it is still at the write's
        start; the caller holds the lock."""
        if written.epoch != self.epoch:
            return
        if self.vectors.applied_seq == written.start:
            self.vectors.apply(written.head, written.touched, [written.vectors], written.dimension)
        if max(self.changed.position, self.lexical_seq) != written.start or self.changed.overflowed_at is not None:
            return
        if len(self.changed) + len(written.changed.rows) > changed_rows.LIMIT:
            self.changed.overflow(written.head)
        else:
            self.changed.apply_counted(written.head, written.changed)

    def search(self, connection: sqlite3.Connection, in_index: Callable[[], R], in_rows: Callable[[R], T]) -> T:
        """``in_index`` (a look at the indexes, under their lock) and ``in_rows`` (the search itself,
        reading its hits from SQLite) on one consistent state: one read transaction, the vectors
        caught up to its snapshot exactly and tantivy at a position no later than it (`lexical_view`),
        so a reader sees a document's old version or its new one, never both or neither."""
        while True:
            seen = self._newest()  # committed heads only: a later snapshot is at least this new
            connection.execute("BEGIN")
            try:
                epoch, head = self._head(connection)
                with self._lock:
                    if epoch == self.epoch and self._newest() > head and seen <= head:
                        continue  # another search caught the indexes up past this snapshot: take a newer one
                    self._sync_locked(connection, include_lexical=False)
                    found = in_index()
                return in_rows(found)
            finally:
                connection.execute("COMMIT")

    def lexical_view(self, words: Sequence[str]) -> tuple[LexicalView | None, ChangedTerms] | None:
        """Tantivy as last published and what a search for ``words`` needs of the rows changed after
        its position, which are missing or stale in it (under the lock, in `search`); None while
        those rows are too many to hold (`ChangedRows.overflow`): FTS5 answers instead."""
        if self.changed.overflowed_at is not None:
            return None
        return self.lexical.view, self.changed.terms(words)

    def catch_up_lexical(self, connection: sqlite3.Connection) -> None:
        """Bring tantivy to the head of the change log without holding up the searches: the
        changes are replayed and committed outside the lock (searches keep the published snapshot
        meanwhile), then the new snapshot and its position are published together. Nothing is
        published if another commit came between (a rebuild's: the next catch-up starts from it)."""
        with self._lexical_writing:
            connection.execute("BEGIN")
            try:
                epoch, head = self._head(connection)
                start = self.lexical_seq  # only a publish moves it without `_lexical_writing`: checked below
                if epoch != self.epoch or not 0 <= start < head:
                    return  # current, or a rebuild (`sync`) is due
                self._replay_lexical(connection, start, head)
            finally:
                connection.execute("COMMIT")
            view, commits = self.lexical.commit(), self.lexical.commits
        with self._lock:
            if self.epoch == epoch and self.lexical_seq == start and self.lexical.commits == commits:
                self.lexical.publish(view)
                self._save_lexical_state(epoch, head)

    def _sync_locked(self, connection: sqlite3.Connection, include_lexical: bool = True) -> SyncReport | None:
        """The caller holds the lock and an open read transaction. ``include_lexical`` False leaves
        a BM25 index that is merely behind where it is (the vectors always catch up)."""
        started = time.perf_counter()
        epoch, head = self._head(connection)
        if epoch != self.epoch:
            with self._lexical_writing:
                self._load(epoch)
        committing = self._committing
        if committing is not None and committing.head <= head:  # committed: what the writer read, not read again
            self._take_in(committing)
        seqs = (
            [self.vectors.applied_seq, self.lexical_seq]
            if include_lexical or self.lexical_seq < 0
            else [self.vectors.applied_seq]
        )
        lowest, newest = min(seqs), max(seqs)
        if lowest == head == newest:
            self._catch_up_changed(connection, head)
            return None
        backlog = head - lowest if lowest >= 0 else head
        large = backlog > REBUILD_BACKLOG and backlog > self.lexical.document_count // 2
        if lowest < 0 or newest > head or large:
            self._rebuild(connection, epoch, head)
            report = SyncReport("rebuilt", backlog, time.perf_counter() - started)
        else:
            self._catch_up(connection, epoch, head, include_lexical)
            self._catch_up_changed(connection, head)
            report = SyncReport("caught-up", backlog, time.perf_counter() - started)
        self.last_sync = report
        return report

    def _load(self, epoch: str) -> None:
        """Open what is on disk for ``epoch``; a watermark of -1 marks a part to rebuild."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.epoch = epoch
        try:
            state = json.loads(self._lexical_state.read_text())
            lexical_ok = state.get("epoch") == epoch
            self.lexical_seq = int(state["seq"]) if lexical_ok else -1
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            lexical_ok, self.lexical_seq = False, -1
        self.lexical.open(reset=not lexical_ok)
        self.changed.reset(self.lexical_seq)
        if not self.vectors.load(epoch):
            self.vectors.applied_seq = -1

    def _save_lexical_state(self, epoch: str, seq: int) -> None:
        """Tantivy, as published, holds every change up to ``seq``; the caller holds the lock."""
        temporary = self._lexical_state.with_suffix(".tmp")
        temporary.write_text(json.dumps({"epoch": epoch, "seq": seq, "format": 1}))
        os.replace(temporary, self._lexical_state)
        self.lexical_seq = seq
        self.changed.published(seq)

    def _rebuild(self, connection: sqlite3.Connection, epoch: str, head: int) -> None:
        with self._lexical_writing:
            self._rebuild_both(connection, epoch, head)
        release_freed_memory()  # the build's buffers, not the serving process's to keep

    def _rebuild_both(self, connection: sqlite3.Connection, epoch: str, head: int) -> None:
        dimension = self._dimension(connection)
        self.lexical.clear()

        def batches() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            cursor = connection.execute("SELECT id, heading, text, embedding FROM chunks ORDER BY id")
            while rows := cursor.fetchmany(SCAN_BATCH):
                self.lexical.replace((), ((r[0], indexed_text(r[1], r[2])) for r in rows))
                yield _vectors_of(rows, dimension)

        self.vectors.rebuild(epoch, head, dimension, batches())
        self.lexical.publish(self.lexical.commit())
        self._save_lexical_state(epoch, head)
        self.changed.reset(head)  # a restored older file's head can be below the last position seen

    def _catch_up(self, connection: sqlite3.Connection, epoch: str, head: int, include_lexical: bool) -> None:
        if include_lexical and self.lexical_seq < head:
            with self._lexical_writing:
                self._replay_lexical(connection, self.lexical_seq, head)
                self.lexical.publish(self.lexical.commit())
                self._save_lexical_state(epoch, head)
        if self.vectors.applied_seq < head:
            touched = _changed_rowids(connection, self.vectors.applied_seq, head)
            dimension = self._dimension(connection)
            self.vectors.apply(head, touched, _batches(connection, touched, dimension), dimension)

    def _replay_lexical(self, connection: sqlite3.Connection, start: int, head: int) -> None:
        """Every rowid changed in (start, head] forgotten by tantivy's writer and added back as
        SQLite has it at ``head`` (gone if deleted); the caller holds `_lexical_writing`."""
        touched = _changed_rowids(connection, start, head)
        for offset in range(0, touched.size, LOOKUP_BATCH):  # streamed: a backlog can be large
            part = touched[offset : offset + LOOKUP_BATCH].tolist()
            marks = ",".join("?" * len(part))
            rows = connection.execute(f"SELECT id, heading, text FROM chunks WHERE id IN ({marks})", part)
            self.lexical.replace(part, ((r[0], indexed_text(r[1], r[2])) for r in rows))

    def _catch_up_changed(self, connection: sqlite3.Connection, head: int) -> None:
        """The rows changed after tantivy's position up to ``head`` into `changed`, as SQLite has them."""
        start = max(self.changed.position, self.lexical_seq)
        if start >= head or self.changed.overflowed_at is not None:
            return
        changes = _changed_texts(connection, start, head, changed_rows.LIMIT - len(self.changed))
        if changes is None:
            self.changed.overflow(head)
        else:
            self.changed.apply(head, changes)

    def durable_seq(self) -> int:
        """The change-log position both indexes have saved on disk: every change up to it is in
        them for good, so the log's rows before it are never read again (-1: not known)."""
        if self.epoch is None or self.lexical_seq < 0 or self.vectors.applied_seq < 0:
            return -1
        return min(self.lexical_seq, self.vectors.saved_seq)

    def close(self) -> None:
        with self._lock, self._lexical_writing:
            self.vectors.close()
            self.lexical.close()
            self.epoch = None
            self.lexical_seq = -1
        release_freed_memory()  # the exact delta and the readers' buffers


def _changed_rowids(connection: sqlite3.Connection, start: int, head: int) -> np.ndarray:
    """The rowids the change log touched in (start, head], sorted, once each."""
    changes = connection.execute(
        "SELECT chunk_rowid FROM chunk_changes WHERE seq > ? AND seq <= ?", (start, head)
    ).fetchall()
    return np.unique(np.fromiter((c[0] for c in changes), dtype=np.int64, count=len(changes)))


def _changed_texts(
    connection: sqlite3.Connection, start: int, head: int, limit: int
) -> list[tuple[int, int, str | None]] | None:
    """(rowid, position of its last change, its indexed text at ``head`` or None) for every row
    changed in (start, head]; None past ``limit`` rows (their texts are not read)."""
    last_change = dict(
        connection.execute(
            "SELECT chunk_rowid, max(seq) FROM chunk_changes WHERE seq > ? AND seq <= ? GROUP BY chunk_rowid",
            (start, head),
        ).fetchall()
    )
    rowids = list(last_change)
    if len(rowids) > limit:
        return None
    texts: dict[int, str] = {}
    for offset in range(0, len(rowids), LOOKUP_BATCH):
        part = rowids[offset : offset + LOOKUP_BATCH]
        marks = ",".join("?" * len(part))
        rows = connection.execute(f"SELECT id, heading, text FROM chunks WHERE id IN ({marks})", part)
        texts.update((r[0], indexed_text(r[1], r[2])) for r in rows)
    return [(rowid, last_change[rowid], texts.get(rowid)) for rowid in rowids]


def _batches(
    connection: sqlite3.Connection, rowids: np.ndarray, dimension: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The current vectors of ``rowids`` (those that still exist), a few thousand at a time."""
    for offset in range(0, rowids.size, LOOKUP_BATCH):
        part = rowids[offset : offset + LOOKUP_BATCH].tolist()
        marks = ",".join("?" * len(part))
        rows = connection.execute(f"SELECT id, heading, text, embedding FROM chunks WHERE id IN ({marks})", part)
        yield _vectors_of(rows.fetchall(), dimension)


def _vectors_of(rows: list[sqlite3.Row] | list[tuple], dimension: int) -> tuple[np.ndarray, np.ndarray]:
    rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows or not dimension:
        return rowids, np.empty((len(rows), dimension), dtype=np.float32)
    matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), dimension)
    return rowids, matrix

"""The kNN leg of the embedded store at scale: one HNSW graph updated in place, plus an exact delta
of the rows the graph has not taken in yet.

- **Graph**: a usearch HNSW index of int8-quantised vectors (~0.5 KB a vector with its links, ~0.5
  GB at a million 384-d chunks), loaded whole when the store opens. Changed and deleted rows leave
  it together at `REMOVE_BATCH`, before a save and once the delta is empty (usearch marks the slot
  free, skips it in searches and gives it to the next vector added); until then a search drops them
  from the graph's answer and asks for that many more. So a search asks the graph for fewer than
  2k + `REMOVE_BATCH` neighbours however much has changed since it was saved, and no copy of the
  graph is ever rebuilt beside it. Up to `EXACT_BELOW` vectors it is searched exhaustively (exact
  on the int8 vectors).
- **Delta**: rows written since, float32, searched exactly, until a background thread adds them to
  the graph, `INSERT_BATCH` at a time so that searches interleave. Its size is what ingestion runs
  ahead of insertion. A search never adds to the graph itself, however large the delta: the
  writer waits instead while the delta holds `DELTA_LIMIT` rows (`wait_for_room`), so the delta
  bounds what a search costs and writes go no faster than the graph takes them in.
- **Saving**: the graph is written to one file, with the change-log position it holds everything
  up to, every `save_interval` changes and on close (after taking in the whole delta, on every
  core: nothing is searched any more); opening replays the changes after that position.

Candidates are only candidates: the store re-scores them with the float32 vectors it reads from
SQLite (the source of truth), so quantisation can cost recall at the margin, never a wrong score
or a deleted chunk. The store keeps this in step with SQLite (`search_indexes.py`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# onnxruntime (the embedder, flashrank, OCR) segfaults on import when usearch's native library was
# loaded first (onnxruntime 1.31 / usearch 2.26); loaded in this order both work.
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401

from usearch.index import Index

from carrag.services.stores.memory import release_freed_memory

logger = logging.getLogger(__name__)

EXACT_BELOW = 50_000
CONNECTIVITY = 16
EXPANSION_ADD = 64
# Candidates a graph search keeps: at 96 the graph missed 0.0027 nDCG@10 against exact on SciFact
# (k 30), at 192 none (`scripts/legs_quality.py`; docs/benchmarks.md).
EXPANSION_SEARCH = 192
# Rows per hold of the lock: a search waits for at most one batch (~1-3 ms). Rows are not added
# outside the lock: usearch does not promise add, remove and search to be safe on one index from
# several threads (its add lets other Python threads run meanwhile; its save holds the GIL throughout).
INSERT_BATCH = 2
# Between batches the inserter pauses this long: a lock is not handed over on release, so without
# it the inserter would take the lock straight back and starve the searches waiting for it.
INSERT_PAUSE = 0.0002
# Rows leaving the graph that wait to be removed together. usearch's next add after any removal
# rehashes its whole key table (~50 ms at 1M, under the lock): removed with every write, a search
# waited for that most of the time while documents were replaced (`docs/benchmarks.md`). A search
# asks the graph for this many more neighbours at most.
REMOVE_BATCH = 256
# Rows the delta may hold before the writer waits (`wait_for_room`): what its exact search may add to
# every query, ~0.6 ms per 10,000 384-d rows (einsum, load 10).
DELTA_LIMIT = 10_000
SAVE_EVERY = 20_000  # changes between saves, and at least a tenth of the graph (each save writes it whole)


def _new_index(dimension: int) -> Index:
    return Index(
        ndim=dimension,
        metric="cos",
        dtype="i8",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def matrix_times_vector(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` on the calling thread. numpy's ``@`` hands a large product to OpenBLAS's
    threads, which spin against the embedder and the other requests on a busy machine (20 ms for
    10,000 x 384 at load 10, against 0.6 ms for this loop, `docs/benchmarks.md`)."""
    return np.einsum("ij,j->i", matrix, vector)


def normalised(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


@dataclass(slots=True)
class _Delta:
    """Rows appended in change-log order (amortised O(rows)), taken from the front by the inserter;
    a removed row is masked out, not moved. Taking and counting cost O(rows taken), not O(delta):
    the inserter does both for every batch."""

    dimension: int
    rowids: np.ndarray
    seqs: np.ndarray
    matrix: np.ndarray
    live: np.ndarray
    size: int = 0
    start: int = 0  # the first live row (or `size`): rows before it have all been taken or removed
    live_count: int = 0

    @classmethod
    def empty(cls, dimension: int) -> _Delta:
        return cls(
            dimension,
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty((0, dimension), np.float32),
            np.empty(0, bool),
        )

    def _skip_removed(self) -> None:
        while self.start < self.size and not self.live[self.start]:
            self.start += 1

    def first_seq(self) -> int | None:
        """The change-log position the oldest row still waiting came after (rows are in log order)."""
        return int(self.seqs[self.start]) if self.start < self.size else None

    def remove(self, rowids: np.ndarray) -> None:
        if self.size > self.start and rowids.size:
            removed = self.live[self.start : self.size] & np.isin(self.rowids[self.start : self.size], rowids)
            self.live[self.start : self.size] &= ~removed
            self.live_count -= int(removed.sum())
            self._skip_removed()

    def add(self, rowids: np.ndarray, matrix: np.ndarray, seq: int) -> None:
        extra = rowids.size
        if not extra:
            return
        if self.start > self.size // 2:  # drop the taken front before growing
            keep = slice(self.start, self.size)
            self.size -= self.start
            self.rowids[: self.size] = self.rowids[keep]
            self.seqs[: self.size] = self.seqs[keep]
            self.matrix[: self.size] = self.matrix[keep]
            self.live[: self.size] = self.live[keep]
            self.start = 0
        if self.size + extra > self.rowids.size:
            capacity = self.size + extra + max(self.size // 2, 1024)
            self.rowids = np.resize(self.rowids, capacity)
            self.seqs = np.resize(self.seqs, capacity)
            self.live = np.resize(self.live, capacity)
            grown = np.empty((capacity, self.dimension), np.float32)
            grown[: self.size] = self.matrix[: self.size]
            self.matrix = grown
        end = self.size + extra
        self.rowids[self.size : end] = rowids
        self.seqs[self.size : end] = seq
        self.matrix[self.size : end] = matrix
        self.live[self.size : end] = True
        self.size = end
        self.live_count += extra

    def take(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The oldest ``count`` rows still waiting, which leave the delta."""
        positions: list[int] = []
        while len(positions) < count and self.start < self.size:
            positions.append(self.start)
            self.live[self.start] = False
            self.start += 1
            self._skip_removed()
        self.live_count -= len(positions)
        return self.rowids[positions].copy(), self.matrix[positions].copy()

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        if not self.live_count:
            return []
        live = self.live[self.start : self.size]
        scores = matrix_times_vector(self.matrix[self.start : self.size], vector)
        scores[~live] = -np.inf
        k = min(k, self.live_count)
        top = np.argpartition(-scores, k - 1)[:k]
        return [int(r) for r in self.rowids[self.start + top]]


class VectorSegments:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state_path = directory / "vectors.json"
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # rows to insert or a save due, or stopping
        self.dimension = 0
        self.epoch = ""
        self.graph: Index | None = None
        self.graph_file: str | None = None
        self.saved_seq = 0  # the change-log position the saved graph file holds everything up to
        self.applied_seq = 0  # ... and graph + delta together
        self._delta = _Delta.empty(0)
        self._leaving = np.empty(0, np.int64)  # rowids in the graph that are to leave it (`REMOVE_BATCH`)
        self._inserter: threading.Thread | None = None
        self._stopping = False
        self.insert_error: BaseException | None = None

    # --- state on disk -------------------------------------------------------------------------
    def load(self, epoch: str) -> bool:
        """Open the saved graph if it belongs to ``epoch``; False: rebuild needed."""
        self.close()
        try:
            state = json.loads(self.state_path.read_text())
            if state["epoch"] != epoch:
                return False
            graph = None
            if state["file"]:
                # a saved graph keeps its structure, not its expansions: without them, usearch's defaults
                graph = Index.restore(
                    str(self.directory / state["file"]), expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH
                )
                if graph is None or graph.ndim != state["dimension"]:
                    return False
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            return False
        with self._lock:
            self.epoch, self.dimension = epoch, int(state["dimension"])
            self.graph, self.graph_file = graph, state["file"]
            self.saved_seq = self.applied_seq = int(state["seq"])
            self._delta, self._leaving = _Delta.empty(self.dimension), np.empty(0, np.int64)
            self._start_inserter()
        return True

    def _graph_seq(self) -> int:
        """The change-log position the graph alone holds everything up to once the rows leaving it
        are removed (the caller holds the lock): rows reach it once taken from the delta, oldest first."""
        first = self._delta.first_seq()
        return self.applied_seq if first is None else first

    def _save(self) -> None:
        """Write the graph and the position it reflects (the caller holds the lock)."""
        self._remove_leaving()
        seq = self._graph_seq()
        name = None
        if self.graph is not None and len(self.graph):
            name = f"vectors-{seq}-{uuid.uuid4().hex[:8]}.usearch"
            self.graph.save(str(self.directory / name))
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(
            json.dumps({"epoch": self.epoch, "seq": seq, "file": name, "dimension": self.dimension, "format": 2})
        )
        os.replace(temporary, self.state_path)
        self.graph_file, self.saved_seq = name, seq
        for path in self.directory.glob("vectors-*.usearch"):
            if path.name != name:
                with contextlib.suppress(OSError):
                    path.unlink()

    @property
    def save_interval(self) -> int:
        return max(SAVE_EVERY, len(self.graph) // 10 if self.graph is not None else 0)

    # --- changes -------------------------------------------------------------------------------
    def rebuild(self, epoch: str, seq: int, dimension: int, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
        """A fresh graph from every (rowids, vectors) batch, saved; it replaces graph and delta."""
        self.directory.mkdir(parents=True, exist_ok=True)
        graph = _new_index(dimension) if dimension else None
        for rowids, matrix in batches:
            if graph is not None and rowids.size:
                graph.add(rowids, normalised(matrix), threads=2)
        with self._lock:
            self.epoch, self.dimension = epoch, dimension
            self.graph = graph if graph is not None and len(graph) else None
            self.applied_seq = seq
            self._delta, self._leaving = _Delta.empty(dimension), np.empty(0, np.int64)
            self._save()
            self._start_inserter()
        del graph
        release_freed_memory()  # the build's buffers, not the serving process's to keep

    def apply(
        self, seq: int, touched: np.ndarray, batches: Iterable[tuple[np.ndarray, np.ndarray]], dimension: int
    ) -> None:
        """Changes up to ``seq``: every ``touched`` rowid is forgotten (the graph's leave with the next
        batch of removals), then the (rowids, vectors) ``batches`` (the touched rows that exist at
        ``seq``) are added to the delta, tagged with the position they come after (the graph lacks
        changes past it)."""
        with self._lock:
            if not self.dimension and dimension:
                self.dimension = dimension
                self._delta = _Delta.empty(dimension)
            self._delta.remove(touched)
            if self.graph is not None and touched.size:
                self._leaving = np.union1d(self._leaving, touched[self.graph.contains(touched)])
                if len(self._leaving) >= REMOVE_BATCH:
                    self._remove_leaving()
            for rowids, matrix in batches:
                self._delta.add(rowids, normalised(matrix), self.applied_seq)
            self.applied_seq = seq
            self._start_inserter()
            self._work.notify()

    def _remove_leaving(self) -> None:
        """The caller holds the lock."""
        if self.graph is not None and self._leaving.size:
            self.graph.remove(self._leaving)
        self._leaving = np.empty(0, np.int64)

    def _add_to_graph(self, rowids: np.ndarray, matrix: np.ndarray, threads: int) -> None:
        if not rowids.size:
            return
        if self._leaving.size and np.isin(rowids, self._leaving).any():  # a rowid SQLite gave out again
            self._remove_leaving()
        if self.graph is None:
            self.graph = _new_index(self.dimension)
        self.graph.add(rowids, matrix, threads=threads)

    # --- the inserter ----------------------------------------------------------------------------
    def _start_inserter(self) -> None:
        """The caller holds the lock."""
        if self._inserter is None and not self._stopping and self.epoch:
            self._inserter = threading.Thread(target=self._insert, name="vector-inserter", daemon=True)
            self._inserter.start()

    def _save_due(self) -> bool:
        return self._graph_seq() - self.saved_seq >= self.save_interval

    def _insert(self) -> None:
        """Move the delta into the graph, oldest rows first, one batch per hold of the lock; remove
        the rows leaving the graph once the delta is empty (`apply` removes them at `REMOVE_BATCH`);
        save the graph every `save_interval` changes."""
        try:
            while True:
                with self._work:
                    while (
                        not self._stopping
                        and not self._delta.live_count
                        and not self._leaving.size
                        and not self._save_due()
                    ):
                        self._work.wait()
                    if self._stopping:
                        return
                    rowids, matrix = self._delta.take(INSERT_BATCH)
                    if not self._delta.live_count:
                        self._remove_leaving()
                    self._add_to_graph(rowids, matrix, threads=1)
                    if self._save_due():
                        self._save()
                    if self._delta.live_count < DELTA_LIMIT:
                        self._work.notify_all()  # `wait_for_room`, `wait_for_inserts`
                time.sleep(INSERT_PAUSE)
        except Exception as exc:  # the rows stay searchable in the delta; the next open replays them
            logger.warning("adding rows to the HNSW graph failed; they stay in the exact delta", exc_info=True)
            with self._work:
                self.insert_error = exc
                self._work.notify_all()

    def wait_for_room(self) -> None:
        """Block while the delta holds `DELTA_LIMIT` rows or more (the writer, after each commit):
        writes go no faster than the graph takes them in, and no search pays for a larger delta.
        Returns at once when there is no inserter to wait for (closing, stopped on an error)."""
        with self._work:
            self._work.wait_for(
                lambda: (
                    self._delta.live_count < DELTA_LIMIT
                    or self._inserter is None
                    or self._stopping
                    or self.insert_error is not None
                )
            )

    def wait_for_inserts(self, timeout: float | None = None) -> bool:
        """Block until the delta is empty and the rows leaving the graph have left it (tests, benchmarks);
        False on timeout or a stopped inserter."""
        with self._work:
            return self._work.wait_for(
                lambda: (
                    not (self._delta.live_count or self._leaving.size)
                    or self._inserter is None
                    or self.insert_error is not None
                ),
                timeout,
            ) and not (self._delta.live_count or self._leaving.size)

    # --- searching -----------------------------------------------------------------------------
    def candidates(self, vector: np.ndarray, k: int) -> list[int]:
        """Rowids of at least the ``k`` nearest vectors (with a margin), best guesses first: 2k from
        the graph (asked for as many more as rows are leaving it, which are dropped), k from the delta."""
        if not self.dimension or vector.shape[-1] != self.dimension or k <= 0:
            return []
        query = normalised(vector.reshape(1, -1))[0]
        with self._lock:
            found = self._delta.search(query, k)
            graph = self.graph
            if graph is not None and len(graph):
                wanted = min(2 * k + len(self._leaving), len(graph))
                keys = graph.search(query, wanted, exact=len(graph) <= EXACT_BELOW).keys
                found = [int(key) for key in keys[~np.isin(keys, self._leaving)][: 2 * k]] + found
        return list(dict.fromkeys(found))

    @property
    def waiting(self) -> int:
        """Rows in the delta, not yet in the graph."""
        return self._delta.live_count

    def close(self) -> None:
        """Stop the inserter, add what is left in the delta and save the graph if it changed."""
        with self._work:
            self._stopping = True
            self._work.notify_all()
        if self._inserter is not None:
            self._inserter.join()
        with self._lock:
            if self.insert_error is None:
                self._add_to_graph(*self._delta.take(self._delta.size), threads=0)
            if self.epoch and self._graph_seq() > self.saved_seq:
                with contextlib.suppress(OSError):
                    self._save()
            self.graph = None
            self._delta, self._leaving = _Delta.empty(self.dimension), np.empty(0, np.int64)
            self._inserter, self._stopping = None, False
            self.epoch = ""

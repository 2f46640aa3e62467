"""The kNN leg of the embedded store at scale: an HNSW graph on disk plus a small exact delta.

- **Main segment**: a usearch HNSW index of int8-quantised vectors, saved to one file and opened
  as a memory-mapped view, so opening it is instant and only the pages a search touches become
  resident (~0.5 GB on disk at a million 384-d chunks, against 1.5 GB of float32 in RAM).
  Up to `EXACT_BELOW` vectors it is searched exhaustively (exact on the int8 vectors).
- **Delta**: the vectors written since the main segment was saved, float32 in memory, searched
  exactly; **tombstones**: rowids changed since then, whose main-segment copy no longer counts.
- **Compaction**, in a background thread once the delta passes `compaction_threshold`: load the
  main segment, drop the tombstones, add the delta, save a new file and swap it in. Searches go on
  meanwhile; nothing is ever rebuilt per write.

Candidates are only candidates: the store re-scores them with the float32 vectors it reads from
SQLite (the source of truth), so quantisation and staleness can cost recall at the margin, never a
wrong score or a deleted chunk. The store keeps this in step with SQLite (`search_indexes.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
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

EXACT_BELOW = 50_000
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 96
MIN_COMPACTION = 20_000


def _new_index(dimension: int) -> Index:
    return Index(
        ndim=dimension,
        metric="cos",
        dtype="i8",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def normalised(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


@dataclass(slots=True)
class _Delta:
    """Rows appended in place (amortised O(rows)); a removed row is masked out, not moved."""

    dimension: int
    rowids: np.ndarray
    seqs: np.ndarray
    matrix: np.ndarray
    live: np.ndarray
    size: int = 0

    @classmethod
    def empty(cls, dimension: int) -> _Delta:
        return cls(
            dimension,
            np.empty(0, np.int64),
            np.empty(0, np.int64),
            np.empty((0, dimension), np.float32),
            np.empty(0, bool),
        )

    @property
    def live_count(self) -> int:
        return int(self.live[: self.size].sum())

    def remove(self, rowids: np.ndarray) -> None:
        if self.size and rowids.size:
            self.live[: self.size] &= ~np.isin(self.rowids[: self.size], rowids)

    def add(self, rowids: np.ndarray, matrix: np.ndarray, seq: int) -> None:
        extra = rowids.size
        if not extra:
            return
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

    def after(self, seq: int) -> _Delta:
        keep = np.flatnonzero(self.live[: self.size] & (self.seqs[: self.size] > seq))
        rest = _Delta.empty(self.dimension)
        rest.add(self.rowids[keep], self.matrix[keep], 0)
        rest.seqs[: keep.size] = self.seqs[keep]
        return rest

    def search(self, vector: np.ndarray, k: int) -> list[int]:
        positions = np.flatnonzero(self.live[: self.size])
        if not positions.size:
            return []
        scores = self.matrix[positions] @ vector
        k = min(k, positions.size)
        top = np.argpartition(-scores, k - 1)[:k]
        return [int(r) for r in self.rowids[positions[top]]]


class VectorSegments:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state_path = directory / "vectors.json"
        self._lock = threading.Lock()
        self.dimension = 0
        self.main: Index | None = None
        self.main_file: str | None = None
        self.main_seq = 0  # the change-log position the main segment reflects
        self.applied_seq = 0  # ... and main + delta + tombstones together
        self._delta = _Delta.empty(0)
        self._tombstones: dict[int, int] = {}  # rowid -> seq of its latest change
        self._compaction: threading.Thread | None = None
        self.compaction_error: BaseException | None = None

    # --- state on disk -------------------------------------------------------------------------
    def load(self, epoch: str) -> bool:
        """Open the saved main segment if it belongs to ``epoch``; False: rebuild needed."""
        self.close()
        try:
            state = json.loads(self.state_path.read_text())
            if state["epoch"] != epoch:
                return False
            main = None
            if state["file"]:
                main = Index.restore(str(self.directory / state["file"]), view=True)
                if main is None or main.ndim != state["dimension"]:
                    return False
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            return False
        self.dimension = int(state["dimension"])
        self.main, self.main_file = main, state["file"]
        self.main_seq = self.applied_seq = int(state["seq"])
        self._delta = _Delta.empty(self.dimension)
        self._tombstones = {}
        return True

    def _save_state(self, epoch: str, seq: int, main_file: str | None) -> None:
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(
            json.dumps({"epoch": epoch, "seq": seq, "file": main_file, "dimension": self.dimension, "format": 1})
        )
        os.replace(temporary, self.state_path)

    def _write_main(self, index: Index, seq: int) -> str:
        name = f"vectors-{seq}-{uuid.uuid4().hex[:8]}.usearch"
        index.save(str(self.directory / name))
        return name

    def _remove_old_files(self, keep: str | None) -> None:
        for path in self.directory.glob("vectors-*.usearch"):
            if path.name != keep:
                with contextlib.suppress(OSError):
                    path.unlink()  # a search still holding the old view keeps its mapping

    # --- building ------------------------------------------------------------------------------
    def rebuild(self, epoch: str, seq: int, dimension: int, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
        """A fresh main segment from every (rowids, vectors) batch, saved and opened as a view."""
        self.wait_for_compaction()
        self.directory.mkdir(parents=True, exist_ok=True)
        index = _new_index(dimension) if dimension else None
        for rowids, matrix in batches:
            if index is not None and rowids.size:
                index.add(rowids, normalised(matrix), threads=2)
        name = None
        if index is not None and len(index):
            name = self._write_main(index, seq)
        del index
        with self._lock:
            self.dimension = dimension
            self.main = Index.restore(str(self.directory / name), view=True) if name else None
            self.main_file, self.main_seq, self.applied_seq = name, seq, seq
            self._delta = _Delta.empty(dimension)
            self._tombstones = {}
        self._save_state(epoch, seq, name)
        self._remove_old_files(name)

    def merge(
        self,
        epoch: str,
        seq: int,
        touched: np.ndarray,
        dimension: int,
        batches: Iterable[tuple[np.ndarray, np.ndarray]],
    ) -> None:
        """A large backlog goes straight into a new main segment (the graph loaded whole, the
        ``touched`` rowids dropped from it, ``batches`` of their current vectors added) instead of
        the float32 delta: memory stays one graph, never graph + a delta the size of the backlog."""
        self.wait_for_compaction()
        with self._lock:
            main_file = self.main_file
        if not dimension:
            return
        index = Index.restore(str(self.directory / main_file)) if main_file else _new_index(dimension)
        assert index is not None
        if touched.size:
            present = touched[np.asarray(index.contains(touched), dtype=bool)]
            if present.size:
                index.remove(present)
        for rowids, matrix in batches:
            if rowids.size:
                index.add(rowids, normalised(matrix), threads=2)
        name = self._write_main(index, seq) if len(index) else None
        del index
        view = Index.restore(str(self.directory / name), view=True) if name else None
        with self._lock:
            self.dimension = dimension
            self.main, self.main_file, self.main_seq, self.applied_seq = view, name, seq, seq
            self._delta = _Delta.empty(dimension)
            self._tombstones = {}
        self._save_state(epoch, seq, name)
        self._remove_old_files(name)
        release_freed_memory()

    def apply(self, seq: int, touched: np.ndarray, rowids: np.ndarray, matrix: np.ndarray, dimension: int) -> None:
        """Changes up to ``seq``: every ``touched`` rowid is forgotten, then ``rowids`` (the touched
        rows that exist at ``seq``) hold ``matrix``."""
        with self._lock:
            if not self.dimension and dimension:
                self.dimension = dimension
                self._delta = _Delta.empty(dimension)
            self._delta.remove(touched)
            if self.main is not None:
                for rowid in touched.tolist():
                    self._tombstones[rowid] = seq
            if rowids.size:
                self._delta.add(rowids, normalised(matrix), seq)
            self.applied_seq = seq

    # --- searching -----------------------------------------------------------------------------
    def candidates(self, vector: np.ndarray, k: int) -> list[int]:
        """Rowids of at least the ``k`` nearest vectors (with a margin), best guesses first."""
        if not self.dimension or vector.shape[-1] != self.dimension or k <= 0:
            return []
        query = normalised(vector.reshape(1, -1))[0]
        with self._lock:
            main, tombstones, delta = self.main, dict(self._tombstones), self._delta
            found = delta.search(query, k)
        if main is not None and len(main):
            wanted = min(len(main), 2 * k + len(tombstones))
            matches = main.search(query, wanted, exact=len(main) <= EXACT_BELOW)
            keys = [int(key) for key in matches.keys if int(key) not in tombstones]
            found = keys[: 2 * k] + found
        return list(dict.fromkeys(found))

    # --- compaction ----------------------------------------------------------------------------
    @property
    def compaction_threshold(self) -> int:
        main_size = len(self.main) if self.main is not None else 0
        return max(MIN_COMPACTION, main_size // 20)

    @property
    def backlog(self) -> int:
        """Rows the delta and the tombstones stand for (what a compaction would fold in)."""
        return self._delta.live_count + len(self._tombstones)

    def pending_rowids(self) -> np.ndarray:
        """The rowids whose main-segment entry the delta or a tombstone overrides."""
        with self._lock:
            delta = self._delta
            live = delta.rowids[: delta.size][delta.live[: delta.size]]
            return np.union1d(live, np.fromiter(self._tombstones, dtype=np.int64, count=len(self._tombstones)))

    def needs_compaction(self) -> bool:
        return self.backlog >= self.compaction_threshold and self._compaction is None

    def start_compaction(self, epoch: str) -> None:
        with self._lock:
            if self._compaction is not None:
                return
            seq, main_file = self.applied_seq, self.main_file
            delta = self._delta
            positions = np.flatnonzero(delta.live[: delta.size])
            rowids, matrix = delta.rowids[positions].copy(), delta.matrix[positions].copy()
            removed = np.array(list(self._tombstones), dtype=np.int64)
            dimension = self.dimension
            self._compaction = threading.Thread(
                target=self._compact,
                args=(epoch, seq, main_file, dimension, rowids, matrix, removed),
                name="vector-compaction",
                daemon=True,
            )
            self._compaction.start()

    def _compact(
        self,
        epoch: str,
        seq: int,
        main_file: str | None,
        dimension: int,
        rowids: np.ndarray,
        matrix: np.ndarray,
        removed: np.ndarray,
    ) -> None:
        try:
            index = Index.restore(str(self.directory / main_file)) if main_file else _new_index(dimension)
            assert index is not None
            if removed.size:
                present = removed[np.asarray(index.contains(removed), dtype=bool)]
                if present.size:
                    index.remove(present)
            if rowids.size:
                index.add(rowids, matrix, threads=1)
            name = self._write_main(index, seq) if len(index) else None
            del index
            view = Index.restore(str(self.directory / name), view=True) if name else None
            with self._lock:
                self.main, self.main_file, self.main_seq = view, name, seq
                self._delta = self._delta.after(seq)
                self._tombstones = {r: s for r, s in self._tombstones.items() if s > seq}
            self._save_state(epoch, seq, name)
            self._remove_old_files(name)
            release_freed_memory()  # the graph was loaded whole to be rewritten
        except Exception as exc:  # noqa: BLE001 - a failed compaction leaves main + delta as they were
            self.compaction_error = exc
        finally:
            self._compaction = None

    def wait_for_compaction(self) -> None:
        thread = self._compaction
        if thread is not None:
            thread.join()

    def close(self) -> None:
        self.wait_for_compaction()
        with self._lock:
            self.main = None
            self._delta = _Delta.empty(self.dimension)
            self._tombstones = {}

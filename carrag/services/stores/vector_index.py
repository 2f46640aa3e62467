"""In-memory copy of the SQLite store's vectors for brute-force kNN.

SQLite keeps the float32 vectors (the source of truth); this class holds them as one normalised
matrix so a query is a single matrix-vector product. Each snapshot is tagged with the store's
write generation; a search that finds the generation moved reloads (another process wrote), while
this process's own writes patch the snapshot in place of a reload.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class VectorSnapshot:
    generation: int
    rowids: np.ndarray  # int64, shape (n,)
    matrix: np.ndarray  # float32, shape (n, dim)

    def search(self, vector: np.ndarray, k: int, allowed_rowids: np.ndarray | None = None) -> list[tuple[int, float]]:
        if self.rowids.size == 0 or k <= 0:
            return []
        scores = self.matrix @ vector.astype(np.float32)
        if allowed_rowids is not None:
            mask = np.isin(self.rowids, allowed_rowids, assume_unique=True)
            candidates = np.flatnonzero(mask)
            if candidates.size == 0:
                return []
            scores = scores[candidates]
        else:
            candidates = None
        k = min(k, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        positions = candidates[top] if candidates is not None else top
        return [(int(self.rowids[p]), float(s)) for p, s in zip(positions, scores[top], strict=True)]


def empty_snapshot(generation: int = -1, dimension: int = 0) -> VectorSnapshot:
    return VectorSnapshot(generation, np.empty(0, dtype=np.int64), np.empty((0, dimension), dtype=np.float32))


class VectorIndex:
    def __init__(self) -> None:
        self._snapshot = empty_snapshot()
        # The current snapshot's arrays are prefixes of these buffers; rows past them are spare
        # capacity that no snapshot can see, so appends write there instead of copying the index.
        self._rowid_buffer, self._matrix_buffer = self._snapshot.rowids, self._snapshot.matrix
        self._lock = threading.Lock()
        self.reload_lock = threading.Lock()  # one thread reloads at a time; others wait and reuse

    @property
    def snapshot(self) -> VectorSnapshot:
        return self._snapshot

    def replace(self, snapshot: VectorSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot
            self._rowid_buffer, self._matrix_buffer = snapshot.rowids, snapshot.matrix

    def apply_write(
        self,
        from_generation: int,
        to_generation: int,
        removed_rowids: np.ndarray,
        added_rowids: np.ndarray,
        added_matrix: np.ndarray,
    ) -> None:
        """Patch the snapshot after this process's own committed write, if it is current."""
        with self._lock:
            current = self._snapshot
            if current.generation != from_generation:
                return  # stale already; the next search reloads from SQLite
            rowids, matrix = current.rowids, current.matrix
            if removed_rowids.size:
                keep = ~np.isin(rowids, removed_rowids)
                rowids, matrix = rowids[keep], matrix[keep]  # new arrays: older snapshots keep theirs
                self._rowid_buffer, self._matrix_buffer = rowids, matrix
            if added_rowids.size:
                rowids, matrix = self._append(rowids, matrix, added_rowids, added_matrix.astype(np.float32))
            self._snapshot = VectorSnapshot(to_generation, rowids, matrix)

    def _append(
        self, rowids: np.ndarray, matrix: np.ndarray, added_rowids: np.ndarray, added_matrix: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Append in amortised O(added) time: a stream of one-document writes while searches keep
        the snapshot current used to copy the whole index per write (~200 ms each at 100k chunks)."""
        size, extra = rowids.shape[0], added_rowids.shape[0]
        buffer = self._matrix_buffer
        if buffer.shape[0] < size + extra or (size and buffer.shape[1] != added_matrix.shape[1]) or size == 0:
            capacity = size + extra + max(size // 4, 1024)  # grow geometrically
            new_buffer = np.empty((capacity, added_matrix.shape[1]), dtype=np.float32)
            new_rowids = np.empty(capacity, dtype=np.int64)
            if size:
                new_buffer[:size] = matrix
                new_rowids[:size] = rowids
            self._matrix_buffer, self._rowid_buffer = new_buffer, new_rowids
        self._matrix_buffer[size : size + extra] = added_matrix
        self._rowid_buffer[size : size + extra] = added_rowids
        return self._rowid_buffer[: size + extra], self._matrix_buffer[: size + extra]

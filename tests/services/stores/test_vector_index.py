import numpy as np
import pytest

from carrag.services.stores.vector_index import VectorIndex, VectorSnapshot


def _unit(rows: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_appends_do_not_disturb_older_snapshots_and_are_searchable() -> None:
    index = VectorIndex()
    first = _unit(3, 1)
    index.replace(VectorSnapshot(0, np.array([1, 2, 3], dtype=np.int64), first))
    before = index.snapshot
    generation = 0
    added = _unit(2000, 2)  # many small writes: they land in spare capacity, not in copies
    for offset in range(0, 2000, 4):
        index.apply_write(
            generation,
            generation + 1,
            np.empty(0, dtype=np.int64),
            np.arange(100 + offset, 104 + offset, dtype=np.int64),
            added[offset : offset + 4],
        )
        generation += 1
    after = index.snapshot
    assert after.generation == 500 and after.rowids.shape == (2003,)
    assert before.rowids.tolist() == [1, 2, 3] and np.array_equal(before.matrix, first), "old readers see no change"
    assert np.array_equal(after.matrix[3:], added)
    assert after.search(added[1234], 1) == [(1334, pytest.approx(1.0, abs=1e-5))]


def test_removal_then_append() -> None:
    index = VectorIndex()
    index.replace(VectorSnapshot(0, np.array([1, 2, 3], dtype=np.int64), _unit(3, 3)))
    held = index.snapshot
    index.apply_write(0, 1, np.array([2], dtype=np.int64), np.array([4], dtype=np.int64), _unit(1, 4))
    assert index.snapshot.rowids.tolist() == [1, 3, 4]
    assert held.rowids.tolist() == [1, 2, 3]
    index.apply_write(5, 6, np.empty(0, dtype=np.int64), np.array([9], dtype=np.int64), _unit(1, 5))
    assert index.snapshot.generation == 1, "a write from a stale generation is ignored (the next search reloads)"

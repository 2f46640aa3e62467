"""The kNN leg's candidates right after many changes, store level (issue 29; docs/benchmarks.md).

Usage: python scripts/vector_under_ingest.py [TREE]   (TREE: a checkout whose carrag/ is measured, default .)
A 100k random 384-d graph, then 5,003 new and 5,000 replaced rows in one catch-up; prints
`VectorSegments.candidates` p50 (k 15, 200 queries) fresh, right after the changes and, once the
background inserter has drained them, after. Runs the tombstone version (before issue 29) too.
"""

import importlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else ".")
VectorSegments = importlib.import_module("carrag.services.stores.vector_segments").VectorSegments

rng = np.random.default_rng(0)
ROWS, DIMENSION = 100_000, 384
matrix = rng.standard_normal((ROWS + 10_003, DIMENSION)).astype(np.float32)
queries = matrix[rng.integers(0, ROWS, 200)] + 0.5 * rng.standard_normal((200, DIMENSION)).astype(np.float32)
segments = VectorSegments(Path(tempfile.mkdtemp()))
segments.rebuild(
    "e", ROWS, DIMENSION, ((np.arange(i, i + 5000) + 1, matrix[i : i + 5000]) for i in range(0, ROWS, 5000))
)


def p50() -> float:
    samples = []
    for query in queries:
        started = time.perf_counter()
        segments.candidates(query, 15)
        samples.append(time.perf_counter() - started)
    return round(float(np.median(samples)) * 1000, 2)


print("fresh", p50())
touched = np.concatenate([np.arange(ROWS + 1, ROWS + 5004), np.arange(1, 10001, 2)])
if hasattr(segments, "start_compaction"):  # before issue 29: apply(seq, touched, rowids, matrix, dimension)
    segments.apply(ROWS + 1, touched, touched, matrix[: touched.size] * 1.01, DIMENSION)
else:
    segments.apply(ROWS + 1, touched, [(touched, matrix[: touched.size] * 1.01)], DIMENSION)
print("after 5,003 new + 5,000 replaced rows", p50())
if hasattr(segments, "wait_for_inserts"):
    started = time.perf_counter()
    segments.wait_for_inserts()
    print("drained in", round(time.perf_counter() - started, 1), "s; then", p50())
segments.close()

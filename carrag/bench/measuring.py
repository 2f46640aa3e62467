"""Instruments of the speed benchmarks: latency percentiles, a process's peak memory, the store's size
on disk and the machine a run was made on."""

from __future__ import annotations

import math
import platform
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psutil


@dataclass(slots=True)
class Latency:
    samples_ms: list[float]

    @property
    def p50(self) -> float:
        return float(np.percentile(self.samples_ms, 50)) if self.samples_ms else math.nan

    @property
    def p95(self) -> float:
        return float(np.percentile(self.samples_ms, 95)) if self.samples_ms else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {"p50_ms": round(self.p50, 2), "p95_ms": round(self.p95, 2), "n": len(self.samples_ms)}


class PeakRss:
    """Peak resident memory of a process (default: this one) while the block runs, sampled every
    ``interval`` seconds; ``baseline_bytes`` is its memory when the sampler was made.

    RSS counts anonymous memory (heap, model weights, buffers) and the pages of memory-mapped files
    the process has touched (the HNSW graph, tantivy's segments, shared libraries). The second kind
    is clean page cache the kernel reclaims under pressure, so the anonymous peak is reported too
    (``peak_anon_bytes``: RSS minus resident file-backed and shared pages, /proc/<pid>/statm)."""

    def __init__(self, interval: float = 0.01, pid: int | None = None) -> None:
        self.interval = interval
        self._process = psutil.Process(pid)
        self.baseline_bytes = self._process.memory_info().rss
        self.peak_bytes = self.baseline_bytes
        self.peak_anon_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)

    def _measure(self) -> None:
        memory = self._process.memory_info()
        self.peak_bytes = max(self.peak_bytes, memory.rss)
        self.peak_anon_bytes = max(self.peak_anon_bytes, memory.rss - getattr(memory, "shared", 0))

    def _sample(self) -> None:
        while True:
            self._measure()
            if self._stop.wait(self.interval):
                return

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20

    @property
    def peak_anon_mb(self) -> float:
        return self.peak_anon_bytes / 2**20

    @property
    def growth_mb(self) -> float:
        return (self.peak_bytes - self.baseline_bytes) / 2**20

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._measure()


def machine_facts() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": psutil.cpu_count(logical=True),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in psutil.getloadavg()],
    }


def disk_bytes(path: Path) -> int:
    """The SQLite file, its WAL and everything beside it that belongs to it (``<file>.*``)."""
    total = 0
    for item in path.parent.glob(path.name + "*"):
        files = item.rglob("*") if item.is_dir() else [item]
        total += sum(f.stat().st_size for f in files if f.is_file())
    return total

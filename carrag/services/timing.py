"""Stage timings as the services report them (``timings_ms``)."""

from __future__ import annotations

import time


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a `time.perf_counter` reading), to 0.01 ms."""
    return round((time.perf_counter() - started) * 1000, 2)

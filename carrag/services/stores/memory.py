"""Giving freed heap back to the operating system after a bulk index build: glibc keeps freed memory in
its arenas, so without `malloc_trim(0)` the process would carry the build's high-water mark for good
(a no-op on musl and macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from typing import Any


@functools.cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Return free heap pages to the operating system; True when glibc did release some."""
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False

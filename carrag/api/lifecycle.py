"""Graceful shutdown on SIGTERM and Ctrl-C. uvicorn owns the signal and drains connections before the
lifespan shutdown; `on_shutdown_signal` lets the app hear it at once, so new ingests get 503,
/health/ready turns 503 and the jobs' grace period starts while uvicorn drains, not after.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# What signal.getsignal returns: a handler function, SIG_DFL/SIG_IGN, or None (not installed from Python).
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@contextlib.contextmanager
def on_shutdown_signal(callback: Callable[[], None]) -> Iterator[None]:
    """While the block runs, call ``callback`` on the running loop when SIGTERM/SIGINT arrives, then
    the handler that was installed before (uvicorn's). Does nothing off the main thread (tests that
    run servers in threads), where signals cannot be handled."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous: dict[int, Handler] = {}

    def handle(sig: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(callback)
        handler = previous.get(sig)
        if callable(handler):
            handler(sig, frame)
        elif handler == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    for sig in SHUTDOWN_SIGNALS:
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if signal.getsignal(signum) is handle:
                signal.signal(signum, handler)


def exit_cleanly_after_sigterm() -> None:
    """For ``carrag serve``: once uvicorn has shut down gracefully it re-raises the SIGTERM it
    caught, to get the default behaviour; make that behaviour a clean exit (status 0)."""
    signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(0))

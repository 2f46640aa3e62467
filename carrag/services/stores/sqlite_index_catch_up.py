"""The background catch-up of the search indexes beside a SQLite store (`search_indexes.py`).

After each committed write the store asks for a catch-up (`schedule`); it runs once writes pause for
`INDEX_SYNC_IDLE_SECONDS`, on its own thread, so the next search finds the indexes current (during a
stream of writes nothing runs: a search catches up itself). After a catch-up, the ``chunk_changes``
rows both indexes have saved for good are deleted on the writer thread (`prune_change_log`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from carrag.services.stores.search_indexes import SearchIndexes

logger = logging.getLogger(__name__)

INDEX_SYNC_IDLE_SECONDS = 0.5


class IndexCatchUp:
    def __init__(
        self,
        indexes: SearchIndexes,
        connection: Callable[[], sqlite3.Connection],
        submit_to_writer: Callable[[Callable[[], None]], object],
    ) -> None:
        """``connection`` gives the calling thread's connection; ``submit_to_writer`` queues work on the
        store's writer thread (raising RuntimeError once it is shut down)."""
        self._indexes = indexes
        self._connection = connection
        self._submit_to_writer = submit_to_writer
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-index-sync")
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._pruned_below = 0  # change-log rows before this seq are gone

    def restart(self) -> None:
        """The store reopened after `stop`."""
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-index-sync")
        self._stopped = False

    def stop(self) -> None:
        """No catch-up starts any more; one under way finishes."""
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()
        self._syncer.shutdown(wait=True)

    def schedule(self) -> None:
        """Catch up once writes pause for `INDEX_SYNC_IDLE_SECONDS` (each call restarts the wait)."""
        with self._lock:
            if self._stopped:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(INDEX_SYNC_IDLE_SECONDS, self._sync_in_background)
            self._timer.daemon = True
            self._timer.start()

    def _sync_in_background(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._syncer.submit(self._background_sync)

    def _background_sync(self) -> None:
        try:
            self._indexes.sync(self._connection())
        except Exception:  # the next search retries and reports the failure
            logger.warning("catching up the search indexes failed; the next search retries", exc_info=True)
            return
        self.prune_change_log()

    def prune_change_log(self) -> None:
        """Delete the change-log rows both indexes have saved for good (`durable_seq`), on the writer
        thread. The row at that position stays, so the log's head never moves back (an index ahead
        of the head means an older copy of the database: rebuild)."""
        upto = self._indexes.durable_seq()
        with self._lock:
            if self._stopped or upto <= self._pruned_below:
                return
            self._pruned_below = upto

        def prune() -> None:
            connection = self._connection()
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute("DELETE FROM chunk_changes WHERE seq < ?", (upto,))
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

        try:
            self._submit_to_writer(prune)
        except RuntimeError:  # closing: the next open prunes
            pass

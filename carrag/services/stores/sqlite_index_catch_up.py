"""The background catch-up of the search indexes beside a SQLite store (`search_indexes.py`).

After each committed write the store asks for a catch-up (`schedule`); it runs on its own thread
once writes pause for `INDEX_SYNC_IDLE_SECONDS`, and during a stream of writes at least every
`INDEX_SYNC_MAX_WAIT_SECONDS`: searches never commit tantivy themselves, they search the rows it
has not caught up with apart (`sqlite_search.py`), so this wait bounds how many those are. Tantivy
catches up first, off the searches' lock, then the vectors. After a catch-up, the ``chunk_changes``
rows both indexes have saved for good are deleted on the writer thread (`prune_change_log`).
The writer waits after a commit while the vectors' exact delta is full (`VectorSegments.wait_for_room`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from carrag.services.stores.search_indexes import SearchIndexes

logger = logging.getLogger(__name__)

INDEX_SYNC_IDLE_SECONDS = 0.5
INDEX_SYNC_MAX_WAIT_SECONDS = 1.0


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
        self._waiting_since: float | None = None  # the first write no catch-up has been queued for
        self._queued = False  # a catch-up is queued and has not started
        self._pruned_below = 0  # change-log rows before this seq are gone

    def restart(self) -> None:
        """The store reopened after `stop`."""
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-index-sync")
        self._stopped, self._queued, self._waiting_since = False, False, None

    def stop(self) -> None:
        """No catch-up is scheduled any more; one under way finishes, and one that writes were waiting
        for runs now, so the indexes are saved with every write (the next open has nothing to replay)."""
        with self._lock:
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()
            pending = self._waiting_since is not None or self._queued
        self._syncer.shutdown(wait=True)
        if pending:
            self._background_sync()

    def schedule(self) -> None:
        """Catch up once writes pause for `INDEX_SYNC_IDLE_SECONDS` (each call restarts the wait), and
        no later than `INDEX_SYNC_MAX_WAIT_SECONDS` after the first write waiting for it. Called on
        the writer thread after each commit, which it holds while the HNSW graph is behind by
        `DELTA_LIMIT` rows: the next write waits for the graph instead of a search inserting."""
        with self._lock:
            if self._stopped:
                return
            now = time.monotonic()
            if self._waiting_since is None:
                self._waiting_since = now
            delay = min(INDEX_SYNC_IDLE_SECONDS, self._waiting_since + INDEX_SYNC_MAX_WAIT_SECONDS - now)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(max(delay, 0.0), self._sync_in_background)
            self._timer.daemon = True
            self._timer.start()
        self._indexes.vectors.wait_for_room()

    def _sync_in_background(self) -> None:
        with self._lock:
            if self._stopped or self._queued:
                return
            self._waiting_since, self._queued = None, True
            self._syncer.submit(self._background_sync)

    def _background_sync(self) -> None:
        with self._lock:
            self._queued = False
        try:
            connection = self._connection()
            self._indexes.catch_up_lexical(connection)
            self._indexes.sync(connection, include_lexical=False)
        except Exception:  # the next catch-up retries; a search reports a failure that stays
            logger.warning("catching up the search indexes failed; the next catch-up retries", exc_info=True)
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

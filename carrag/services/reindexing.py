"""Re-embedding the whole store with the configured model (`carrag reindex`, ``POST /admin/reindex``).

SQLite builds the new vectors beside the live ones in committed batches (an interrupted run continues
where it stopped), then swaps them in one transaction; Elasticsearch builds the next index generation
and moves the alias. Until the swap, searches use the old model (`model_change.py`). One reindex at a
time per process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from carrag.services.embedders.service import EmbeddingService
from carrag.services.ingestion import embedding_input
from carrag.services.models import ParsedDocument
from carrag.services.stores.base import Store

logger = logging.getLogger(__name__)

BATCH_CHUNKS = 256  # chunks embedded and committed together (what a kill -9 can lose)

Progress = Callable[[int, int], None]  # (chunks or documents done, total)


@dataclass(slots=True)
class ReindexStatus:
    state: str = "idle"  # idle | running | done | failed
    store: str = ""
    model: str | None = None  # the model being (or last) re-embedded with
    unit: str = "chunks"  # what done/total count: chunks (SQLite) or documents (Elasticsearch)
    done: int = 0
    total: int = 0
    passes: int = 0  # SQLite: sweeps over the chunks (more than one when writes came in meanwhile)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    seconds: float = 0.0
    error: str | None = None
    detail: str | None = None
    _started: float = field(default=0.0, repr=False)


async def reindex_sqlite(store: Store, embedder: EmbeddingService, progress: Progress | None = None) -> tuple[int, int]:
    """Re-embed every chunk of a SQLite store; returns (chunks embedded by this run, passes)."""
    from carrag.services.stores.sqlite import SqliteStore
    from carrag.services.stores.sqlite_reindex import SqliteReindex

    assert isinstance(store, SqliteStore)
    target = await embedder.embedding_identity()
    reindex = SqliteReindex(store)
    counts = await reindex.begin(target)
    if progress:
        progress(counts.done, counts.total)
    embedded, passes, after = 0, 1, 0
    while True:
        batch = await reindex.pending(after, BATCH_CHUNKS)
        if not batch:
            if await reindex.swap(target):
                if progress:
                    counts = await reindex.counts()
                    progress(counts.total, counts.total)
                return embedded, passes
            passes, after = passes + 1, 0  # chunks came in (or a rowid was reused) meanwhile: sweep again
            continue
        texts = [
            embedding_input(item.chunk, ParsedDocument(text="", filename="", source_type="text", title=item.title))
            for item in batch
        ]
        vectors = await embedder.embed_documents(texts)
        await reindex.save(target, batch, vectors)
        embedded += len(batch)
        after = batch[-1].rowid
        if progress:
            counts = await reindex.counts()  # writes during the run move both figures
            progress(counts.done, counts.total)


class Reindexer:
    """At most one reindex at a time in this process, run in the background for the admin route."""

    def __init__(self, store: Store, embedder: EmbeddingService) -> None:
        self.store = store
        self.embedder = embedder
        self.status = ReindexStatus(store=store.backend)
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _progress(self, done: int, total: int) -> None:
        self.status.done, self.status.total = done, total
        self.status.seconds = round(time.perf_counter() - self.status._started, 1)

    async def run(self, progress: Progress | None = None, *, keep_old: bool = False) -> ReindexStatus:
        """The whole reindex in the foreground (the CLI; the background task calls this too)."""

        def report(done: int, total: int) -> None:
            self._progress(done, total)
            if progress:
                progress(done, total)

        identity = await self.embedder.embedding_identity()
        self.status = ReindexStatus(
            state="running",
            store=self.store.backend,
            model=identity.describe(),
            unit="chunks" if self.store.backend == "sqlite" else "documents",
            started_at=datetime.now(UTC),
            _started=time.perf_counter(),
        )
        try:
            if self.store.backend == "sqlite":
                embedded, passes = await reindex_sqlite(self.store, self.embedder, report)
                self.status.passes = passes
                self.status.detail = f"{embedded} chunks embedded by this run; the new vectors are live"
            else:
                from carrag.services.stores.elasticsearch.reindex import reindex as reindex_elasticsearch

                result = await reindex_elasticsearch(
                    self.store,  # type: ignore[arg-type]
                    self.embedder,
                    keep_old=keep_old,
                    report=lambda line: logger.info("reindex: %s", line),
                    progress=report,
                )
                self.status.detail = f"{result.old_index} -> {result.new_index} ({result.chunks} chunks)"
        except BaseException as exc:
            self.status.state = "failed"
            self.status.error = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.status.finished_at = datetime.now(UTC)
            self.status.seconds = round(time.perf_counter() - self.status._started, 1)
        self.status.state = "done"
        return self.status

    def start(self) -> ReindexStatus:
        """Start a background reindex unless one is running; the status either way."""
        if not self.running:
            self.status = ReindexStatus(state="running", store=self.store.backend, started_at=datetime.now(UTC))
            self._task = asyncio.create_task(self._background(), name="reindex")
        return self.status

    async def _background(self) -> None:
        try:
            await self.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("reindex failed; the old vectors stay live (run it again to continue)")

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - its failure was logged by _background
                pass

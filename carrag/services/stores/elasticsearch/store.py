"""The production store (seed 001, step 6) on Elasticsearch: the `Store` port over an alias
(`layout.py`), with writes batched across callers (`batching.py`) and published through the
visibility protocol (`versions.py`). Reads are searches filtered to live versions.

No lock anywhere: several API processes can share one index, with any number of shards and
replicas (docs/architecture.md, "Elasticsearch: many writers").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
from elasticsearch import AsyncElasticsearch

from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.models import (
    DEFAULT_COLLECTION,
    Chunk,
    Collection,
    ComponentHealth,
    DocumentRecord,
    EmbeddingIdentity,
    MetadataValue,
    Original,
    OriginalFile,
)
from carrag.services.settings import revealed
from carrag.services.stores.base import (
    checked_vectors,
)
from carrag.services.stores.elasticsearch.batching import WriteBatcher
from carrag.services.stores.elasticsearch.collections import CollectionRegistry
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.document_reads import DocumentReads
from carrag.services.stores.elasticsearch.integrity import integrity_problems
from carrag.services.stores.elasticsearch.layout import IndexLayout
from carrag.services.stores.elasticsearch.live_filter import LiveFilter
from carrag.services.stores.elasticsearch.metadata import update_metadata
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
from carrag.services.stores.elasticsearch.search_legs import SearchLegs
from carrag.services.stores.elasticsearch.served_identity import ServedIdentity
from carrag.services.stores.elasticsearch.versions import PendingWrite, Versions
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows

logger = logging.getLogger(__name__)

# ``default`` has no registry record (it always exists), so no creation time of its own
DEFAULT_COLLECTION_CREATED_AT = "1970-01-01T00:00:00+00:00"


class ElasticsearchStore(DocumentReads, SearchLegs):
    backend = "elasticsearch"
    # A hybrid search sends BM25 once its query's embedding is under way (`retrieval/search.py`):
    # sending it and the epoch read costs the event loop ~0.9 ms, while the embedding's thread waits.
    bm25_after_embedding_starts = True

    def __init__(
        self,
        url: str,
        *,
        index: str = "carrag_chunks",
        api_key: str | None = None,
        username: str | None = None,
        password: str | None = None,
        num_candidates: int = 100,
        timeout: float = 30.0,
        shards: int = 1,
        replicas: int = 0,
        refresh_interval: str = "1s",
        write_refresh: str = "wait_for",
        abandoned_after: float = 600.0,
        batch_chunks: int = 2000,
        batches_in_flight: int = 4,
        neighbour_window: int = 0,
        retrieval_k_multiplier: int = 1,
    ) -> None:
        self.url = url
        self.index = index  # the alias
        self.num_candidates = num_candidates
        self.timeout = timeout
        self.connection = Connection(url, api_key=api_key, username=username, password=password, timeout=timeout)
        self.layout = IndexLayout(
            self.connection, index, shards=shards, replicas=replicas, refresh_interval=refresh_interval
        )
        self.originals = OriginalsIndex(self.connection, index, shards=shards, replicas=replicas)
        self.versions = Versions(
            self.connection, index, refresh=write_refresh, abandoned_after=abandoned_after, originals=self.originals
        )
        self.collections = CollectionRegistry(self.versions)
        self.batcher = WriteBatcher(self._write_batch, max_chunks=batch_chunks, max_in_flight=batches_in_flight)
        self._sweeper: asyncio.Task[None] | None = None
        self._windows = PrefetchedWindows(neighbour_window, 1 / max(retrieval_k_multiplier, 1))
        self._live_filter = LiveFilter(self._live_check, self._epoch_beside)
        self.served_identity = ServedIdentity(index, self.layout.identity_with_index)

    @classmethod
    def from_settings(cls, settings: Any) -> ElasticsearchStore:
        return cls(
            settings.elasticsearch_url,
            index=settings.elasticsearch_index,
            api_key=revealed(settings.elasticsearch_api_key),
            username=settings.elasticsearch_username,
            password=revealed(settings.elasticsearch_password),
            num_candidates=settings.elasticsearch_num_candidates,
            timeout=settings.elasticsearch_timeout,
            shards=settings.elasticsearch_shards,
            replicas=settings.elasticsearch_replicas,
            refresh_interval=settings.elasticsearch_refresh_interval,
            write_refresh=settings.elasticsearch_write_refresh,
            abandoned_after=settings.elasticsearch_abandoned_after_seconds,
            neighbour_window=settings.neighbour_window,
            retrieval_k_multiplier=settings.retrieval_k_multiplier,
        )

    @property
    def client(self) -> AsyncElasticsearch:
        """The client itself, for tests and tools."""
        return self.connection.client

    # --- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        await self._ready()
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_periodically(), name="es-version-sweeper")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        await self.batcher.aclose()
        await self.versions.retired.close()  # what this process retired, deleted once the grace is over
        await self.connection.close()

    async def _sweep_periodically(self) -> None:
        """Remove abandoned versions now and then (each process does; the work is idempotent)."""
        interval = max(self.versions.abandoned_after / 2, 1.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self._ready()
                removed = await self.versions.sweep()
                if removed:
                    logger.info("removed abandoned versions", extra={"versions": removed, "index": self.index})
            except DependencyUnavailable as exc:
                logger.warning("sweep of abandoned versions failed", extra={"reason": exc.message})

    async def sweep(self, older_than: float | None = None) -> int:
        """Remove versions that are not live and older than ``older_than`` seconds (see `Versions.sweep`)."""
        await self._ready()
        return await self.versions.sweep(older_than)

    async def health(self) -> ComponentHealth:
        try:
            count = await self.count_chunks()
        except DependencyUnavailable as exc:
            return ComponentHealth("store", "unavailable", self.backend, None, exc.message)
        detail = (
            f"{self.connection.display_url} index {self.index} ({count} chunks, "
            f"Elasticsearch {self.layout.server_version})"
        )
        if self.layout.warnings:
            return ComponentHealth(
                "store", "degraded", self.backend, None, f"{detail}; {'; '.join(self.layout.warnings)}"
            )
        return ComponentHealth("store", "ok", self.backend, None, detail)

    # --- writes --------------------------------------------------------------------------------
    async def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbeddingIdentity,
        *,
        original: OriginalFile | None = None,
    ) -> str | None:
        matrix = checked_vectors(chunks, vectors, identity)
        # Once queued, a write completes or rolls back even if its caller is cancelled.
        return await self.batcher.submit(PendingWrite(document, list(chunks), matrix, identity, original=original))

    async def _write_batch(self, batch: list[PendingWrite]) -> None:
        """One batch: check each model once, then write every version (`Versions.write`)."""
        try:
            await self._ready()
            for identity in dict.fromkeys(item.identity for item in batch):
                try:
                    with self.connection.errors("recording the embedding model", self.index):
                        await self.layout.claim_identity(identity)
                except CarragError as exc:
                    for item in batch:
                        if item.identity == identity:
                            _settle(item, exc)
            accepted = [item for item in batch if not item.future.done()]  # type: ignore[union-attr]
            outcomes = await self.versions.write(accepted) if accepted else []
            for item, outcome in zip(accepted, outcomes, strict=True):
                _settle(item, outcome)
            if any(isinstance(outcome, IndexMissing) for outcome in outcomes):
                raise IndexMissing(self.index)
        except CarragError as exc:
            if isinstance(exc, IndexMissing):
                self.layout.ready = False
                self.layout.forget_identity()
            for item in batch:
                _settle(item, exc)

    async def delete_document(self, document_id: str) -> bool:
        return await asyncio.shield(
            self._guarded("deleting a document", lambda: self.versions.delete(document_id), False)
        )

    async def update_metadata(
        self,
        document_id: str,
        *,
        tags: list[str] | None = None,
        title: str | None = None,
        user_metadata: dict[str, MetadataValue] | None = None,
    ) -> DocumentRecord | None:
        return await asyncio.shield(
            self._guarded(
                "updating a document",
                lambda: update_metadata(
                    self.versions, document_id, tags=tags, title=title, user_metadata=user_metadata
                ),
                None,
            )
        )

    async def wipe(self) -> None:
        """Documents, chunks and the embedding model go; the collections stay (registered again, empty)."""
        await self._ready()
        try:
            collections = [c for c in await self.list_collections() if c.collection_id != DEFAULT_COLLECTION]
        except DependencyUnavailable:
            collections = []
        await self.layout.recreate()
        self.served_identity.forget()
        await self.originals.recreate()
        for collection in collections:
            await self.collections.create(collection)

    # --- originals -----------------------------------------------------------------------------
    async def put_original(self, document_id: str, content: bytes, content_type: str, filename: str) -> bool:
        """Attach an original to a live version. Written first, then the version is checked again: if it
        was replaced or deleted meanwhile (its own removal may have run before this write), the original
        is removed again and False returned, so nothing is left behind."""

        async def put() -> bool:
            if await self.versions.live_document(document_id) is None:
                return False
            errors = await self.originals.write([(document_id, OriginalFile(content, content_type, filename))])
            if document_id in errors:
                raise errors[document_id]
            if await self.versions.live_document(document_id) is None:
                await self.originals.delete([document_id])
                return False
            return True

        return await asyncio.shield(self._guarded("storing an original", put, False))

    async def get_original(self, document_id: str) -> Original | None:
        async def get() -> Original | None:
            if await self.versions.live_document(document_id) is None:
                return None
            return await self.originals.get(document_id)

        return await self._guarded("reading an original", get, None)

    # --- document reads ------------------------------------------------------------------------
    async def check_integrity(self) -> list[str]:
        """Everything that would make the store inconsistent, as readable lines (empty: consistent).
        Sends this process's deletes of retired versions first (waiting out their grace,
        `retirement.py`) and refreshes the index, so what was deleted is gone from the counts."""
        await self.versions.retired.flush()

        async def check() -> list[str]:
            problems = await integrity_problems(self.connection.client, self.index)
            hits, _ = await self._walk(
                "checking integrity",
                {"term": {"doc_kind": "document"}},
                [{"source_id": "asc"}],
                source_includes=["document_id"],
            )
            live = {hit["_source"]["document_id"] for hit in hits}
            return problems + await self.originals.problems(live)

        return await self._guarded("checking integrity", check, [])

    # --- collections ---------------------------------------------------------------------------
    async def create_collection(self, collection: Collection) -> Collection:
        await self._ready()
        return await asyncio.shield(self.collections.create(collection))

    async def list_collections(self) -> list[Collection]:
        default = [Collection(DEFAULT_COLLECTION, DEFAULT_COLLECTION, DEFAULT_COLLECTION_CREATED_AT)]
        return await self._guarded(
            "listing collections", lambda: self.collections.list(DEFAULT_COLLECTION_CREATED_AT), default
        )

    async def rename_collection(self, collection_id: str, name: str) -> Collection | None:
        await self._ready()
        return await asyncio.shield(self.collections.rename(collection_id, name))

    async def delete_collection(self, collection_id: str) -> bool:
        await self._ready()
        return await asyncio.shield(self.collections.delete(collection_id))


def _settle(item: PendingWrite, outcome: Any) -> None:
    future = item.future
    if future is None or future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)

"""The production store (seed 001, step 6) on Elasticsearch: the `Store` port over an alias
(`layout.py`), with writes batched across callers (`batching.py`) and published through the
visibility protocol (`versions.py`). It delegates: documents to `document_reads.py`, searches to
`search_legs.py`, collections to `collections.py`, originals to `originals.py`.

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
    ScoredChunk,
    SearchFilters,
    StoredChunk,
)
from carrag.services.settings import revealed
from carrag.services.stores.base import ChunkListing, DocumentPage, DocumentSort, SortOrder, VectorHits, checked_vectors
from carrag.services.stores.elasticsearch.batching import WriteBatcher
from carrag.services.stores.elasticsearch.collections import CollectionRegistry
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.document_reads import DocumentReads
from carrag.services.stores.elasticsearch.integrity import integrity_problems
from carrag.services.stores.elasticsearch.layout import IndexLayout
from carrag.services.stores.elasticsearch.metadata import update_metadata
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
from carrag.services.stores.elasticsearch.reads import IndexReads
from carrag.services.stores.elasticsearch.search_legs import SearchLegs
from carrag.services.stores.elasticsearch.served_identity import ServedIdentity
from carrag.services.stores.elasticsearch.sweep import sweep_abandoned
from carrag.services.stores.elasticsearch.versions import PendingWrite, Versions

logger = logging.getLogger(__name__)

# ``default`` has no registry record (it always exists), so no creation time of its own
DEFAULT_COLLECTION_CREATED_AT = "1970-01-01T00:00:00+00:00"


class ElasticsearchStore:
    backend = "elasticsearch"

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
    ) -> None:
        self.index = index  # the alias
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
        self.served_identity = ServedIdentity(index, self.layout.identity_with_index)
        self.reads = IndexReads(self.connection, self.layout, self.originals)
        self.documents = DocumentReads(self.reads, self.versions)
        self.legs = SearchLegs(self.reads, self.versions, self.served_identity, num_candidates, self.embedding_identity)

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
        )

    @property
    def client(self) -> AsyncElasticsearch:
        """The client itself, for tests and tools."""
        return self.connection.client

    # --- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        await self.reads.ready()
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_periodically(), name="es-version-sweeper")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        await self.batcher.aclose()
        await self.connection.close()

    async def _sweep_periodically(self) -> None:
        """Remove abandoned versions now and then (each process does; the work is idempotent)."""
        interval = max(self.versions.abandoned_after / 2, 1.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reads.ready()
                removed = await sweep_abandoned(self.versions)
                if removed:
                    logger.info("removed abandoned versions", extra={"versions": removed, "index": self.index})
            except DependencyUnavailable as exc:
                logger.warning("sweep of abandoned versions failed", extra={"reason": exc.message})

    async def sweep(self, older_than: float | None = None) -> int:
        """Remove versions that are not live and older than ``older_than`` seconds (`sweep.py`)."""
        await self.reads.ready()
        return await sweep_abandoned(self.versions, older_than)

    async def health(self) -> ComponentHealth:
        try:
            count = await self.count_chunks()
        except DependencyUnavailable as exc:
            return ComponentHealth("store", "unavailable", self.backend, None, exc.message)
        server = f"Elasticsearch {self.layout.server_version}"
        detail = "; ".join(
            [f"{self.connection.display_url} index {self.index} ({count} chunks, {server})", *self.layout.warnings]
        )
        return ComponentHealth("store", "degraded" if self.layout.warnings else "ok", self.backend, None, detail)

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
            await self.reads.ready()
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
            self.reads.guarded("deleting a document", lambda: self.versions.delete(document_id), False)
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
            self.reads.guarded(
                "updating a document",
                lambda: update_metadata(
                    self.versions, document_id, tags=tags, title=title, user_metadata=user_metadata
                ),
                None,
            )
        )

    async def wipe(self) -> None:
        """Documents, chunks and the embedding model go; the collections stay (registered again, empty)."""
        await self.reads.ready()
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

        return await asyncio.shield(self.reads.guarded("storing an original", put, False))

    async def get_original(self, document_id: str) -> Original | None:
        async def get() -> Original | None:
            if await self.versions.live_document(document_id) is None:
                return None
            return await self.originals.get(document_id)

        return await self.reads.guarded("reading an original", get, None)

    # --- reads ---------------------------------------------------------------------------------
    async def embedding_identity(self) -> EmbeddingIdentity | None:
        """Read from Elasticsearch (a mapping request); `query_identity` is the searches' cheap one."""

        async def read() -> EmbeddingIdentity | None:
            index, identity = await self.layout.identity_with_index(self.index)
            self.served_identity.learn(index, identity)
            return identity

        return await self.reads.guarded("reading the embedding model", read, None)

    async def query_identity(self) -> EmbeddingIdentity | None:
        """The model of the index searches are served from, as last seen (`served_identity.py`)."""
        return await self.reads.guarded("reading the embedding model", self.served_identity.current, None)

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        return await self.legs.lexical(query, k, filters)

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> VectorHits:
        return await self.legs.vector(vector, k, filters)

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        return await self.legs.windows(centres, radius)

    async def get_document(self, document_id: str) -> DocumentRecord | None:
        return await self.documents.get_document(document_id)

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        return await self.documents.find_by_source(source_id, collection_id)

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        return await self.documents.find_by_content_hash(content_hash, collection_id)

    async def list_documents(
        self,
        *,
        offset: int,
        limit: int,
        tag: str | None = None,
        collection_ids: Sequence[str] = (),
        sort: DocumentSort = "created_at",
        order: SortOrder = "desc",
        filename: str | None = None,
    ) -> DocumentPage:
        return await self.documents.list_documents(
            offset=offset,
            limit=limit,
            tag=tag,
            collection_ids=collection_ids,
            sort=sort,
            order=order,
            filename=filename,
        )

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        return await self.documents.find_documents(reference, limit=limit, collection_ids=collection_ids)

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        return await self.documents.list_sources(collection_ids)

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        return await self.documents.get_chunks(document_id, offset=offset, limit=limit)

    async def count_chunks(self) -> int:
        return await self.documents.count_chunks()

    async def check_integrity(self) -> list[str]:
        """Everything that would make the store inconsistent, as readable lines (empty: consistent)."""
        check = lambda: integrity_problems(self.connection.client, self.index, self.originals)  # noqa: E731
        return await self.reads.guarded("checking integrity", check, [])

    # --- collections ---------------------------------------------------------------------------
    async def create_collection(self, collection: Collection) -> Collection:
        await self.reads.ready()
        return await asyncio.shield(self.collections.create(collection))

    async def list_collections(self) -> list[Collection]:
        default = [Collection(DEFAULT_COLLECTION, DEFAULT_COLLECTION, DEFAULT_COLLECTION_CREATED_AT)]
        return await self.reads.guarded(
            "listing collections", lambda: self.collections.list(DEFAULT_COLLECTION_CREATED_AT), default
        )

    async def rename_collection(self, collection_id: str, name: str) -> Collection | None:
        await self.reads.ready()
        return await asyncio.shield(self.collections.rename(collection_id, name))

    async def delete_collection(self, collection_id: str) -> bool:
        await self.reads.ready()
        return await asyncio.shield(self.collections.delete(collection_id))


def _settle(item: PendingWrite, outcome: Any) -> None:
    future = item.future
    if future is None or future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)

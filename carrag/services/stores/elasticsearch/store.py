"""The `Store` port on Elasticsearch: an alias (`layout.py`), writes batched across callers
(`batching.py`) and published through the visibility protocol (`versions.py`). No lock anywhere:
several API processes can share one index, with any number of shards and replicas."""

from __future__ import annotations

import asyncio
import contextlib
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
from carrag.services.stores.base import (
    ChunkListing,
    DocumentPage,
    DocumentSort,
    SortOrder,
    VectorHits,
    checked_vectors,
    is_glob,
)
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.batching import WriteBatcher
from carrag.services.stores.elasticsearch.collections import CollectionRegistry, default_collection
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.layout import IndexLayout, ServedIdentity
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    source_key,
    source_records_query,
    to_chunk,
    to_document,
)
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
from carrag.services.stores.elasticsearch.reads import IndexReads
from carrag.services.stores.elasticsearch.sweep import integrity_problems, sweep_abandoned, sweep_periodically
from carrag.services.stores.elasticsearch.versions import PendingWrite, Versions


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
        self.batcher = WriteBatcher(self._write_batch)
        self._sweeper: asyncio.Task[None] | None = None
        self.served_identity = ServedIdentity(index, self.layout.identity_with_index)
        self.reads = IndexReads(
            self.connection, self.layout, self.originals, self.versions, self.served_identity, num_candidates
        )

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
    def client(self) -> AsyncElasticsearch:  # for tests and tools
        return self.connection.client

    async def open(self) -> None:
        await self.reads.ready()
        if self._sweeper is None:
            sweeps = sweep_periodically(self.versions, self.reads.ready)
            self._sweeper = asyncio.create_task(sweeps, name="es-version-sweeper")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        await self.batcher.aclose()
        await self.connection.close()

    async def sweep(self, older_than: float | None = None) -> int:
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

    async def _write_batch(self, batch: list[PendingWrite]) -> list[str | BaseException | None]:
        """Check each model once, then write every version (`Versions.write`)."""
        await self.reads.ready()
        refused: dict[EmbeddingIdentity, CarragError] = {}
        for identity in dict.fromkeys(item.identity for item in batch):
            try:
                with self.connection.errors("recording the embedding model", self.index):
                    await self.layout.claim_identity(identity)
            except CarragError as exc:
                refused[identity] = exc
        accepted = [item for item in batch if item.identity not in refused]
        written = iter(await self.versions.write(accepted) if accepted else [])
        outcomes = [refused[item.identity] if item.identity in refused else next(written) for item in batch]
        if any(isinstance(outcome, IndexMissing) for outcome in outcomes):
            self.layout.ready = False  # someone wiped the index: set it up again at the next write
        return outcomes

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
                lambda: self.versions.update_metadata(document_id, tags=tags, title=title, user_metadata=user_metadata),
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

    async def put_original(self, document_id: str, content: bytes, content_type: str, filename: str) -> bool:
        """Attach an original to a live version; if the version was replaced or deleted meanwhile (its
        removal may have run before this write), the original is removed again and False returned."""

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

    async def embedding_identity(self) -> EmbeddingIdentity | None:
        return await self.reads.embedding_identity()

    async def query_identity(self) -> EmbeddingIdentity | None:
        return await self.reads.guarded("reading the embedding model", self.served_identity.current, None)

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        return await self.reads.lexical_search(query, k, filters)

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> VectorHits:
        return await self.reads.vector_search(vector, k, filters)

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        return await self.reads.get_windows(centres, radius)

    async def get_document(self, document_id: str) -> DocumentRecord | None:
        return await self.reads.guarded("looking up a document", lambda: self.versions.live_document(document_id), None)

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        key = source_key(collection_id, source_id)
        state = await self.reads.guarded("looking up a document", lambda: self.versions.source_state(key), None)
        return state.document if state is not None else None

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        response = await self.reads.search(
            "looking up a document",
            query=source_records_query([collection_id], {"term": {"content_hash": content_hash}}),
            sort=[{"created_at": "desc"}, {"document_id": "asc"}],
            size=1,
        )
        hits = response["hits"]["hits"]
        return to_document(hits[0]["_source"]) if hits else None

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
        """Source records from before ``filename_lower`` (`carrag reindex` adds it) sort last by name and
        match no file name filter."""
        filters: list[dict[str, Any]] = []
        if tag is not None:
            filters.append({"term": {"tags.keyword": tag}})
        if filename is not None:
            filters.append(queries.filename_clause(filename.lower(), is_glob(filename)))
        field = "filename_lower" if sort == "filename" else sort
        hits, total = await self.reads.walk(
            "listing documents",
            source_records_query(collection_ids, *filters),
            [{field: {"order": order, "missing": "_last"}}, {"document_id": "asc"}],
            offset=offset,
            limit=limit,
        )
        return DocumentPage([to_document(hit["_source"]) for hit in hits], total)

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        hits, total = await self.reads.walk(
            "finding documents",
            queries.reference_query(reference, source_records_query(collection_ids)),
            ["_score", {"created_at": "desc"}, {"document_id": "asc"}],
            offset=0,
            limit=limit,
        )
        return DocumentPage([to_document(hit["_source"]) for hit in hits], total)

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        hits, _ = await self.reads.walk(
            "listing sources",
            source_records_query(collection_ids),
            [{"source_id": "asc"}],
            source_includes=["source_id", "source_type"],
        )
        return [(hit["_source"]["source_id"], hit["_source"]["source_type"]) for hit in hits]

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        if await self.get_document(document_id) is None:
            return []
        hits, _ = await self.reads.walk(
            "listing a document's chunks",
            {"bool": {"filter": [{"term": {"doc_kind": "chunk"}}, {"term": {"document_id": document_id}}]}},
            [{"chunk_index": "asc"}],
            offset=offset,
            limit=limit,
            source_excludes=CHUNK_SOURCE_EXCLUDES,
        )
        if not hits:
            return []
        identity = await self.embedding_identity()
        dimension = identity.dimension if identity else 0  # every vector has the mapping's dims
        return [ChunkListing(to_chunk(hit["_source"]), dimension) for hit in hits]

    async def count_chunks(self) -> int:
        """The sum of the live source records' chunk counts."""
        response = await self.reads.search(
            "counting chunks",
            query={"term": {"doc_kind": "document"}},
            size=0,
            aggregations={"chunks": {"sum": {"field": "chunk_count"}}},
        )
        return int((response.get("aggregations") or {}).get("chunks", {}).get("value") or 0)

    async def check_integrity(self) -> list[str]:
        check = lambda: integrity_problems(self.connection.client, self.index, self.originals)  # noqa: E731
        return await self.reads.guarded("checking integrity", check, [])

    async def create_collection(self, collection: Collection) -> Collection:
        await self.reads.ready()
        return await asyncio.shield(self.collections.create(collection))

    async def list_collections(self) -> list[Collection]:
        return await self.reads.guarded("listing collections", self.collections.list, [default_collection()])

    async def rename_collection(self, collection_id: str, name: str) -> Collection | None:
        await self.reads.ready()
        return await asyncio.shield(self.collections.rename(collection_id, name))

    async def delete_collection(self, collection_id: str) -> bool:
        await self.reads.ready()
        return await asyncio.shield(self.collections.delete(collection_id))

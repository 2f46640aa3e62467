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
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
from elasticsearch import AsyncElasticsearch

from carrag.services.errors import CarragError, DependencyUnavailable, UpstreamError
from carrag.services.ids import chunk_id
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
    checked_vectors,
    is_glob,
)
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.batching import WriteBatcher
from carrag.services.stores.elasticsearch.collections import CollectionRegistry
from carrag.services.stores.elasticsearch.connection import Connection, IndexMissing
from carrag.services.stores.elasticsearch.integrity import integrity_problems
from carrag.services.stores.elasticsearch.layout import IndexLayout
from carrag.services.stores.elasticsearch.live_filter import LiveCheck, LiveFilter
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    collection_clause,
    record_key,
    source_key,
    to_chunk,
    to_document,
)
from carrag.services.stores.elasticsearch.metadata import update_metadata
from carrag.services.stores.elasticsearch.originals import OriginalsIndex
from carrag.services.stores.elasticsearch.served_identity import ServedIdentity
from carrag.services.stores.elasticsearch.versions import PendingWrite, Versions
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows
from carrag.services.stores.searched_model import searched_model

logger = logging.getLogger(__name__)

EMPTY_RESPONSE: dict[str, Any] = {"hits": {"hits": [], "total": {"value": 0}}}
# ``default`` has no registry record (it always exists), so no creation time of its own
DEFAULT_COLLECTION_CREATED_AT = "1970-01-01T00:00:00+00:00"

Hit = dict[str, Any]


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
        self._live_filter = LiveFilter(self._live_check)
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

    # --- plumbing ------------------------------------------------------------------------------
    async def _ready(self) -> None:
        await self.layout.ensure()
        await self.originals.ensure()

    async def _guarded(self, action: str, call: Callable[[], Awaitable[Any]], empty: Any) -> Any:
        """Run a read; a missing index (someone is wiping it) reads as empty and is set up next time."""
        await self._ready()
        try:
            with self.connection.errors(action, self.index):
                return await call()
        except IndexMissing:
            self.layout.ready = False
            return empty

    async def _search(self, action: str, **request: Any) -> dict[str, Any]:
        return await self._guarded(
            action,
            # a shard without any copy fails the search (503) instead of answering without its chunks
            lambda: self.connection.client.search(index=self.index, allow_partial_search_results=False, **request),
            EMPTY_RESPONSE,
        )

    async def _walk(
        self,
        action: str,
        query: dict[str, Any],
        sort: list[Any],
        *,
        offset: int = 0,
        limit: int | None = None,
        **request: Any,
    ) -> tuple[list[Hit], int]:
        """Hits ``offset .. offset+limit`` (all when ``limit`` is None) in ``sort`` order, and the total.

        Within Elasticsearch's result window this is one search; beyond it, pages of
        ``search_after`` (``sort`` must end in a unique field)."""
        window = queries.MAX_RESULT_WINDOW
        if limit is not None and offset + limit <= window:
            response = await self._search(
                action, query=query, sort=sort, from_=offset, size=limit, track_total_hits=True, **request
            )
            return response["hits"]["hits"], int(response["hits"]["total"]["value"])
        end = None if limit is None else offset + limit
        hits: list[Hit] = []
        seen, total, after = 0, 0, None
        while end is None or seen < end:
            page = await self._search(
                action,
                query=query,
                sort=sort,
                size=window,
                track_total_hits=after is None,
                **({"search_after": after} if after is not None else {}),
                **request,
            )
            if after is None:
                total = int(page["hits"]["total"]["value"])
            batch = page["hits"]["hits"]
            wanted_from = max(offset - seen, 0)
            wanted_to = len(batch) if end is None else min(end - seen, len(batch))
            hits.extend(batch[wanted_from:wanted_to])
            seen += len(batch)
            if len(batch) < window:
                break
            after = batch[-1]["sort"]
        return hits, total

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

    async def embedding_identity(self) -> EmbeddingIdentity | None:
        """Read from Elasticsearch (a mapping request); `query_identity` is the searches' cheap one."""

        async def read() -> EmbeddingIdentity | None:
            index, identity = await self.layout.identity_with_index(self.index)
            self.served_identity.learn(index, identity)
            return identity

        return await self._guarded("reading the embedding model", read, None)

    async def query_identity(self) -> EmbeddingIdentity | None:
        """The model of the index searches are served from, as last seen (`served_identity.py`); a kNN
        leg whose hits come from another index says so (`searched_model.py`)."""
        return await self._guarded("reading the embedding model", self.served_identity.current, None)

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
    async def get_document(self, document_id: str) -> DocumentRecord | None:
        return await self._guarded("looking up a document", lambda: self.versions.live_document(document_id), None)

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        key = source_key(collection_id, source_id)
        state = await self._guarded("looking up a document", lambda: self.versions.source_state(key), None)
        return state.document if state is not None else None

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        """The newest live document of the collection with exactly this ``content_hash`` (a keyword field)."""
        response = await self._search(
            "looking up a document",
            query={
                "bool": {
                    "filter": [
                        {"term": {"doc_kind": "document"}},
                        {"term": {"content_hash": content_hash}},
                        collection_clause([collection_id]),
                    ]
                }
            },
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
        """Sorting and filtering by file name use ``filename_lower``, which source records written
        before it existed lack (`carrag reindex` rewrites them): they sort last and match no filter."""
        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if tag is not None:
            filters.append({"term": {"tags.keyword": tag}})
        if collection_ids:
            filters.append(collection_clause(collection_ids))
        if filename is not None:
            filters.append(queries.filename_clause(filename.lower(), is_glob(filename)))
        field = "filename_lower" if sort == "filename" else sort
        hits, total = await self._walk(
            "listing documents",
            {"bool": {"filter": filters}},
            [{field: {"order": order, "missing": "_last"}}, {"document_id": "asc"}],
            offset=offset,
            limit=limit,
        )
        return DocumentPage([to_document(hit["_source"]) for hit in hits], total)

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        def ranked(query: dict[str, Any], boost: float) -> dict[str, Any]:
            return {"constant_score": {"filter": query, "boost": boost}}

        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if collection_ids:
            filters.append(collection_clause(collection_ids))
        query = {
            "bool": {
                "filter": filters,
                "should": [
                    ranked({"term": {"document_id": reference}}, 100),
                    ranked({"term": {"source_id": reference}}, 10),
                    ranked({"prefix": {"document_id": reference}}, 1),
                    ranked({"wildcard": {"source_id": {"value": "*/" + _escape_wildcard(reference)}}}, 1),
                ],
                "minimum_should_match": 1,
            }
        }
        hits, total = await self._walk(
            "finding documents",
            query,
            ["_score", {"created_at": "desc"}, {"document_id": "asc"}],
            offset=0,
            limit=limit,
        )
        return DocumentPage([to_document(hit["_source"]) for hit in hits], total)

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if collection_ids:
            filters.append(collection_clause(collection_ids))
        hits, _ = await self._walk(
            "listing sources",
            {"bool": {"filter": filters}},
            [{"source_id": "asc"}],
            source_includes=["source_id", "source_type"],
        )
        return [(hit["_source"]["source_id"], hit["_source"]["source_type"]) for hit in hits]

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        if await self.get_document(document_id) is None:
            return []
        hits, _ = await self._walk(
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
        """The chunks of live versions: the sum of the source records' chunk counts."""
        response = await self._search(
            "counting chunks",
            query={"term": {"doc_kind": "document"}},
            size=0,
            aggregations={"chunks": {"sum": {"field": "chunk_count"}}},
        )
        return int((response.get("aggregations") or {}).get("chunks", {}).get("value") or 0)

    async def check_integrity(self) -> list[str]:
        """Everything that would make the store inconsistent, as readable lines (empty: consistent).
        Refreshes the index first, so what was deleted is gone from the counts."""

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

    # --- search legs ---------------------------------------------------------------------------
    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0 or queries.lexical_request(query, k, filters) is None:
            return []

        async def run(size: int, stale: set[str]) -> list[Hit]:
            request = queries.lexical_request(query, size, queries.excluding(filters, stale))
            response = await self._search("searching (BM25)", **request, source_excludes=CHUNK_SOURCE_EXCLUDES)  # type: ignore[arg-type]
            return response["hits"]["hits"]

        found = await self._live_filter.hits(run, k)
        return self._windows.scored(found, lambda hit: float(hit["_score"]))

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0:
            return []

        async def run(size: int, stale: set[str]) -> list[Hit]:
            request = queries.knn_request(vector, size, self.num_candidates, queries.excluding(filters, stale))
            response = await self._search("searching (kNN)", **request, source_excludes=CHUNK_SOURCE_EXCLUDES)
            return response["hits"]["hits"]

        try:
            found = await self._live_filter.hits(run, min(k, queries.MAX_NUM_CANDIDATES))
        except UpstreamError:
            if await self.embedding_identity() is None:  # nothing was ever embedded: no vector field yet
                return []
            raise
        indices = {hit["_index"] for hit in found.hits}
        if len(indices) == 1:  # one search reads one index behind the alias
            searched_model.set(
                await self._guarded(
                    "reading the embedding model", lambda: self.served_identity.of_index(indices.pop()), None
                )
            )
        # Elasticsearch scores cosine as (1 + cos) / 2; report the cosine itself, like SQLite.
        return self._windows.scored(found, lambda hit: 2.0 * float(hit["_score"]) - 1.0)

    async def _live_check(self, hits: list[Hit]) -> LiveCheck:
        """The hits' source records and, in the same multi-get, the chunks around them (`windows.py`)."""
        sources = [record_key(hit["_source"]) for hit in hits]
        around = self._windows.wanted(hits)
        tokens, chunks = await self._guarded(
            "checking which versions are live",
            lambda: self.versions.live_tokens_and_chunks(sources, around),
            ({}, {}),
        )
        return LiveCheck(tokens, chunks, frozenset(hit["_id"] for hit in self._windows.covered(hits)))

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        """One real-time multi-get of the neighbours' ids (derived from document id and index).

        Not checked against the source records: the centres come from hits that were live, a
        version's chunks are consistent among themselves, and a real-time get never returns a
        chunk already deleted."""
        wanted = sorted(
            {
                (document_id, index)
                for document_id, centre in dict.fromkeys(centres)
                for index in range(max(centre - radius, 0), centre + max(radius, 0) + 1)
            }
        )
        if not wanted:
            return []

        async def fetch() -> dict[str, Any]:
            response = await self.connection.client.mget(
                index=self.index,
                ids=[chunk_id(document_id, index) for document_id, index in wanted],
                realtime=True,
                source_excludes=CHUNK_SOURCE_EXCLUDES,
            )
            return response.body

        response = await self._guarded("fetching neighbouring chunks", fetch, {"docs": []})
        chunks = [to_chunk(doc["_source"]) for doc in response["docs"] if doc.get("found")]
        requested = set(wanted)
        return [chunk for chunk in chunks if chunk.key in requested]


def _settle(item: PendingWrite, outcome: Any) -> None:
    future = item.future
    if future is None or future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _escape_wildcard(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")

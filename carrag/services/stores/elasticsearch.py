"""The production store: one Elasticsearch index (seed 001, step 6).

One index (``ELASTICSEARCH_INDEX``, default ``carrag_chunks``) holds two kinds of documents:

- ``doc_kind: chunk``, one per chunk: ``content`` (``english`` analyzer, BM25), ``embedding``
  (``dense_vector``, HNSW, cosine) and the document's descriptive fields copied in, so a hit needs
  no second lookup;
- ``doc_kind: document``, one per document: its ``DocumentRecord`` (listing, lookup by source).

Atomic visibility. The index has one shard and ``refresh_interval: -1``, so nothing written becomes
searchable until an explicit refresh, and a one-shard refresh swaps the searcher in one step. This
process serialises its writes with a lock and refreshes only when the index is consistent: a
document write indexes the new chunks and record, checks every item, deletes the replaced version,
then refreshes once. If an item fails, what was written of the new version is deleted before any
refresh, so nothing partial is ever seen. Deletes that could not be sent (Elasticsearch went away)
are kept and completed before the next refresh. Every read is a search (or a count), so it sees
refreshed state only. The limits (several writing processes, a node crash mid-bulk) are in
docs/deploy.md.

Embedding identity: the model and dimension are kept in the mapping's ``_meta``. The ``embedding``
field is added with the right ``dims`` at the first write, and ``wipe`` recreates the index so a
model with another dimension can follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from elasticsearch import ApiError, AsyncElasticsearch, TransportError, UnsupportedProductError, helpers

from carrag.services.errors import CarragError, DependencyUnavailable, EmbeddingModelMismatch, UpstreamError
from carrag.services.ids import chunk_id
from carrag.services.models import (
    Chunk,
    ComponentHealth,
    DocumentRecord,
    EmbeddingIdentity,
    ScoredChunk,
    SearchFilters,
    StoredChunk,
    chunk_heading,
)
from carrag.services.settings import revealed
from carrag.services.stores.base import ChunkListing, DocumentPage, checked_vectors
from carrag.services.stores.fts_query import query_terms

logger = logging.getLogger(__name__)

# The client's major version must match the server's (docs/deploy.md); the server is checked at open.
SUPPORTED_MAJOR = 8
SCHEMA_VERSION = 1
MAX_RESULT_WINDOW = 10_000  # Elasticsearch's index.max_result_window default
MAX_NUM_CANDIDATES = 10_000  # Elasticsearch's limit for kNN num_candidates
WRITE_TIMEOUT_FACTOR = 4  # bulk requests and refreshes (which build the HNSW graph) get longer
BULK_CHUNK_SIZE = 500
HNSW_OPTIONS = {"type": "hnsw", "m": 16, "ef_construction": 100}
# BM25 field weights: chunk text, then its heading (document title / section path), as in SQLite.
BM25_FIELDS = ["content", "heading^1.0"]

INDEX_SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}

_STORED_ONLY = {"type": "keyword", "index": False, "doc_values": False}
BASE_PROPERTIES: dict[str, Any] = {
    "doc_kind": {"type": "keyword"},
    "document_id": {"type": "keyword"},
    "source_id": {"type": "keyword"},
    "source_type": {"type": "keyword"},
    "filename": _STORED_ONLY,
    "title": _STORED_ONLY,
    "external_id": {"type": "keyword"},
    "content_hash": {"type": "keyword"},
    "chunk_count": {"type": "integer"},
    "tags": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
    "content": {"type": "text", "analyzer": "english"},
    "heading": {"type": "text", "analyzer": "english"},
    "chunk_index": {"type": "integer"},
    "char_start": {"type": "integer"},
    "char_end": {"type": "integer"},
    "pages": {"type": "integer"},
    "section": _STORED_ONLY,
    "metadata": {"type": "object", "enabled": False},
    "created_at": {"type": "date_nanos"},
}
_CHUNK_SOURCE_EXCLUDES = ["embedding"]


def embedding_property(dimension: int) -> dict[str, Any]:
    return {
        "type": "dense_vector",
        "dims": dimension,
        "index": True,
        "similarity": "cosine",
        "index_options": HNSW_OPTIONS,
    }


def glob_to_regexp(glob: str) -> str | None:
    """A SQLite GLOB pattern as a Lucene regular expression (whole-term, case-sensitive).

    ``*`` any run, ``?`` one character, ``[...]`` a class (``^`` negates, ``a-z`` ranges, a ``]``
    right after the opening bracket is literal). Every other character is escaped. Returns None for
    an unclosed ``[``, which SQLite treats as matching nothing.
    """
    out: list[str] = []
    position = 0
    while position < len(glob):
        char = glob[position]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            parsed = _glob_class(glob, position + 1)
            if parsed is None:
                return None
            expression, position = parsed
            out.append(expression)
        else:
            out.append(_literal(char))
        position += 1
    return "".join(out)


def _literal(char: str) -> str:
    # Lucene reads a backslash before a letter or digit as a class such as \d, so only escape the rest.
    return char if char.isalnum() else "\\" + char


def _glob_class(glob: str, start: int) -> tuple[str, int] | None:
    """Translate the class starting after ``[``; returns it and the position of its ``]``."""
    position, invert = start, False
    if position < len(glob) and glob[position] == "^":
        invert, position = True, position + 1
    members: list[str] = []
    first = True
    while position < len(glob) and (glob[position] != "]" or first):
        char = glob[position]
        is_range = char == "-" and members and position + 1 < len(glob) and glob[position + 1] != "]" and not first
        if is_range:
            position += 1
            members[-1] = f"{members[-1]}-{_literal(glob[position])}"
        else:
            members.append(_literal(char))
        first = False
        position += 1
    if position >= len(glob):
        return None
    return "[" + ("^" if invert else "") + "".join(members) + "]", position


def _filter_clauses(filters: SearchFilters) -> list[dict[str, Any]]:
    clauses: list[dict[str, Any]] = [{"term": {"doc_kind": "chunk"}}]
    if filters.tags:
        clauses.append({"terms": {"tags.keyword": list(filters.tags)}})
    if filters.source is not None:
        if filters.source_is_glob:
            pattern = glob_to_regexp(filters.source)
            clauses.append(
                {"regexp": {"source_id": {"value": pattern, "flags": "NONE"}}}
                if pattern is not None
                else {"bool": {"must_not": {"match_all": {}}}}
            )
        else:
            clauses.append({"term": {"source_id": filters.source}})
    if filters.document_ids:
        clauses.append({"terms": {"document_id": list(filters.document_ids)}})
    return clauses


def _to_chunk(source: dict[str, Any]) -> StoredChunk:
    return StoredChunk(
        document_id=source["document_id"],
        chunk_index=source["chunk_index"],
        text=source["content"],
        char_start=source["char_start"],
        char_end=source["char_end"],
        filename=source["filename"],
        source_id=source["source_id"],
        tags=list(source.get("tags") or []),
        pages=list(source.get("pages") or []),
        section=source.get("section"),
        title=source.get("title"),
        external_id=source.get("external_id"),
    )


def _to_document(source: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        document_id=source["document_id"],
        filename=source["filename"],
        source_id=source["source_id"],
        source_type=source["source_type"],
        content_hash=source["content_hash"],
        chunk_count=source["chunk_count"],
        tags=list(source.get("tags") or []),
        metadata=source.get("metadata") or {},
        created_at=source["created_at"],
        title=source.get("title"),
        external_id=source.get("external_id"),
    )


def _record_source(document: DocumentRecord, chunk_count: int) -> dict[str, Any]:
    return {
        "doc_kind": "document",
        "document_id": document.document_id,
        "source_id": document.source_id,
        "source_type": document.source_type,
        "filename": document.filename,
        "title": document.title,
        "external_id": document.external_id,
        "content_hash": document.content_hash,
        "chunk_count": chunk_count,
        "tags": list(document.tags),
        # the same JSON round trip as the SQLite store: anything unusual becomes its str()
        "metadata": json.loads(json.dumps(document.metadata, default=str)),
        "created_at": document.created_at,
    }


def _chunk_source(document: DocumentRecord, chunk: Chunk, vector: np.ndarray) -> dict[str, Any]:
    return {
        "doc_kind": "chunk",
        "document_id": document.document_id,
        "source_id": document.source_id,
        "source_type": document.source_type,
        "filename": document.filename,
        "title": document.title,
        "external_id": document.external_id,
        "tags": list(document.tags),
        "content": chunk.text,
        "heading": chunk_heading(document.title, chunk.section),
        "chunk_index": chunk.chunk_index,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "pages": list(chunk.pages),
        "section": chunk.section,
        "embedding": vector.tolist(),
        "created_at": document.created_at,
    }


def _redacted(url: str) -> str:
    """The URL without credentials, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _api_reason(exc: ApiError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):
        root = (error.get("root_cause") or [error])[0]
        return f"{root.get('type', 'error')}: {root.get('reason', '')}".strip()
    return str(exc.message or error or exc)


def _item_errors(errors: list[dict[str, Any]], *, allow_not_found: bool) -> list[dict[str, Any]]:
    """Per-item bulk failures, as ``{"status", "id", "reason"}``; a delete of a missing id is fine."""
    failures = []
    for entry in errors:
        op_type, item = next(iter(entry.items()))
        status = int(item.get("status", 500))
        if allow_not_found and op_type == "delete" and status == 404:
            continue
        error = item.get("error") or {}
        reason = f"{error.get('type', 'error')}: {error.get('reason', '')}" if isinstance(error, dict) else str(error)
        failures.append({"status": status, "id": item.get("_id"), "reason": reason})
    return failures


class _IndexMissing(DependencyUnavailable):
    """The index vanished (another process is wiping it): reads treat the store as empty, a write
    fails with 503, and the next call creates the index again."""

    def __init__(self, index: str) -> None:
        super().__init__("store", f"the Elasticsearch index {index} was deleted by someone else; retry")


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
    ) -> None:
        self.url = url
        self.index = index
        self.num_candidates = num_candidates
        self.timeout = timeout
        self._display_url = _redacted(url)
        self._api_key = api_key or None
        self._basic_auth = (username, password or "") if username else None
        self._client: AsyncElasticsearch | None = None
        self._lock = asyncio.Lock()  # serialises this process's writes, index setup and refreshes
        self._lock_owner: asyncio.Task[Any] | None = None
        self._index_ready = False
        self._pending_deletes: set[str] = set()  # must be applied before the next refresh
        self._refresh_due = False
        self._server_version: str | None = None
        self._warnings: list[str] = []

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
        )

    # --- plumbing ------------------------------------------------------------------------------
    @property
    def client(self) -> AsyncElasticsearch:
        """Created on first use, so a malformed URL is reported like an unreachable node."""
        if self._client is None:
            try:
                self._client = AsyncElasticsearch(
                    self.url,
                    api_key=self._api_key,
                    basic_auth=self._basic_auth,
                    request_timeout=self.timeout,
                    max_retries=1,
                    retry_on_timeout=False,
                )
            except ValueError as exc:
                raise DependencyUnavailable(
                    "store", f"ELASTICSEARCH_URL {self._display_url!r} is not usable: {exc}"
                ) from exc
        return self._client

    @property
    def _writer(self) -> AsyncElasticsearch:
        return self.client.options(request_timeout=self.timeout * WRITE_TIMEOUT_FACTOR)

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Map the client's exceptions onto the domain's: unreachable or overloaded → 503."""
        try:
            yield
        except CarragError:
            raise
        except UnsupportedProductError as exc:
            raise DependencyUnavailable(
                "store", f"{self._display_url} did not answer as Elasticsearch while {action}"
            ) from exc
        except ApiError as exc:
            status = exc.meta.status if exc.meta is not None else 0
            if status == 404 and "index_not_found" in _api_reason(exc):
                self._index_ready = False
                raise _IndexMissing(self.index) from exc
            if status in (401, 403):
                raise DependencyUnavailable(
                    "store",
                    f"Elasticsearch at {self._display_url} refused access ({status}) while {action}; check "
                    "ELASTICSEARCH_API_KEY or ELASTICSEARCH_USERNAME/ELASTICSEARCH_PASSWORD",
                ) from exc
            if status == 429 or status >= 500:
                raise DependencyUnavailable(
                    "store",
                    f"Elasticsearch at {self._display_url} could not serve {action} ({status} {_api_reason(exc)})",
                ) from exc
            raise UpstreamError(f"Elasticsearch rejected {action} ({status} {_api_reason(exc)})") from exc
        except TransportError as exc:
            raise DependencyUnavailable(
                "store", f"Elasticsearch at {self._display_url} is unreachable while {action}: {exc.message}"
            ) from exc

    @contextlib.asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        async with self._lock:
            self._lock_owner = asyncio.current_task()
            try:
                yield
            finally:
                self._lock_owner = None

    async def _ready(self) -> None:
        """Set up the index if that has not succeeded yet, and finish any interrupted write."""
        if self._index_ready and not self._pending_deletes and not self._refresh_due:
            return
        if self._lock_owner is asyncio.current_task():
            return  # a read inside this task's own write: the write is doing exactly this
        async with self._exclusive():
            await self._ensure_index_locked()
            await self._settle_locked()

    async def _ensure_index_locked(self) -> None:
        if self._index_ready:
            return
        try:
            await self._set_up_index()
        except UpstreamError as exc:  # e.g. an invalid index name: the store cannot work (503), say why
            raise DependencyUnavailable("store", exc.message) from exc
        self._index_ready = True

    async def _set_up_index(self) -> None:
        indices = self.client.indices
        with self._errors(f"setting up the index {self.index}"):
            if self._server_version is None:
                info = await self.client.info()
                self._server_version = str(info["version"]["number"])
                self._check_server_version()
            if not await indices.exists(index=self.index):
                try:
                    await indices.create(
                        index=self.index,
                        settings=INDEX_SETTINGS,
                        mappings={
                            "dynamic": "strict",
                            "_meta": {"carrag_schema": SCHEMA_VERSION},
                            "properties": BASE_PROPERTIES,
                        },
                    )
                    logger.info("created Elasticsearch index", extra={"index": self.index})
                except ApiError as exc:
                    if "resource_already_exists" not in _api_reason(exc):
                        raise
                    await self._adopt_existing_index()  # another process created it first
            else:
                await self._adopt_existing_index()

    async def _adopt_existing_index(self) -> None:
        indices = self.client.indices
        try:
            # adds fields introduced since the index was created; a conflicting field is an error
            await indices.put_mapping(index=self.index, properties=BASE_PROPERTIES)
        except ApiError as exc:
            if exc.meta is not None and exc.meta.status == 400:
                raise DependencyUnavailable(
                    "store",
                    f"the Elasticsearch index {self.index} exists with a mapping Carrag cannot use "
                    f"({_api_reason(exc)}); set ELASTICSEARCH_INDEX to another name or delete that index",
                ) from exc
            raise
        settings = await indices.get_settings(index=self.index)
        index_settings = next(iter(settings.values()))["settings"]["index"]
        self._warnings = [w for w in self._warnings if "shards" not in w]
        if str(index_settings.get("refresh_interval")) != "-1":
            # atomic visibility needs refreshes to happen only when this store asks for them
            await indices.put_settings(index=self.index, settings={"index": {"refresh_interval": "-1"}})
        if int(index_settings.get("number_of_shards", 1)) != 1:
            self._warnings.append(
                f"index {self.index} has {index_settings['number_of_shards']} shards; a document's chunks "
                "may become visible shard by shard (create it with 1 shard)"
            )
            logger.warning("Elasticsearch index has more than one shard", extra={"index": self.index})

    def _check_server_version(self) -> None:
        major = int((self._server_version or "0").split(".")[0] or 0)
        self._warnings = [w for w in self._warnings if "version" not in w]
        if major != SUPPORTED_MAJOR:
            self._warnings.append(
                f"Elasticsearch server version {self._server_version} does not match the client's major "
                f"version {SUPPORTED_MAJOR}"
            )
            logger.warning("Elasticsearch major version mismatch", extra={"server": self._server_version})

    async def _settle_locked(self) -> None:
        """Apply deletes still owed, then refresh if anything changed since the last refresh."""
        if self._pending_deletes:
            owed = sorted(self._pending_deletes)
            failures = await self._bulk(
                [{"_op_type": "delete", "_index": self.index, "_id": doc_id} for doc_id in owed],
                "removing documents",
            )
            if failures:
                raise self._bulk_failure(failures, len(owed), "removing documents")
            self._pending_deletes.difference_update(owed)
            self._refresh_due = True
        if self._refresh_due:
            with self._errors("refreshing the index"):
                await self._writer.indices.refresh(index=self.index)
            self._refresh_due = False

    async def _bulk(self, actions: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
        """Send ``actions`` through the async bulk helper; returns the failed items (not raised)."""
        if not actions:
            return []
        with self._errors(action):
            _, errors = await helpers.async_bulk(
                self._writer,
                actions,
                chunk_size=BULK_CHUNK_SIZE,
                raise_on_error=False,
                max_retries=2,  # items rejected with 429 (queue full) are retried
                initial_backoff=0.5,
                max_backoff=4,
            )
        return _item_errors(list(errors), allow_not_found=True)  # type: ignore[arg-type]

    def _bulk_failure(
        self, failures: list[dict[str, Any]], total: int, action: str, consequence: str = ""
    ) -> CarragError:
        first = failures[0]
        message = (
            f"Elasticsearch failed {len(failures)} of {total} operations while {action} "
            f"(first: {first['status']} {first['reason']}){consequence}"
        )
        if any(f["status"] == 429 or f["status"] >= 500 for f in failures):
            return DependencyUnavailable("store", message)
        return UpstreamError(message)

    async def _search(self, action: str, **request: Any) -> dict[str, Any]:
        """One search; a missing index reads as an empty one."""
        await self._ready()
        try:
            with self._errors(action):
                return await self.client.search(index=self.index, **request)
        except _IndexMissing:
            return {"hits": {"hits": [], "total": {"value": 0}}}

    async def _walk(
        self,
        action: str,
        query: dict[str, Any],
        sort: list[Any],
        *,
        offset: int = 0,
        limit: int | None = None,
        **request: Any,
    ) -> tuple[list[dict[str, Any]], int]:
        """Hits ``offset .. offset+limit`` (all when ``limit`` is None) in ``sort`` order, and the total.

        Within Elasticsearch's result window this is one search; beyond it, pages of
        ``search_after`` (``sort`` must end in a unique field)."""
        if limit is not None and offset + limit <= MAX_RESULT_WINDOW:
            response = await self._search(
                action, query=query, sort=sort, from_=offset, size=limit, track_total_hits=True, **request
            )
            return response["hits"]["hits"], int(response["hits"]["total"]["value"])
        end = None if limit is None else offset + limit
        hits: list[dict[str, Any]] = []
        seen, total, after = 0, 0, None
        while end is None or seen < end:
            page = await self._search(
                action,
                query=query,
                sort=sort,
                size=MAX_RESULT_WINDOW,
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
            if len(batch) < MAX_RESULT_WINDOW:
                break
            after = batch[-1]["sort"]
        return hits, total

    async def _stored_identity(self) -> EmbeddingIdentity | None:
        try:
            with self._errors("reading the embedding model"):
                response = await self.client.indices.get_mapping(index=self.index)
        except _IndexMissing:
            return None
        mappings = next(iter(response.values()))["mappings"]
        embedding = mappings.get("properties", {}).get("embedding")
        if not embedding or not embedding.get("dims"):
            return None
        meta = mappings.get("_meta") or {}
        return EmbeddingIdentity(str(meta.get("embedding_model", "")), int(embedding["dims"]))

    # --- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        async with self._exclusive():
            await self._ensure_index_locked()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def health(self) -> ComponentHealth:
        try:
            count = await self.count_chunks()
        except DependencyUnavailable as exc:
            return ComponentHealth("store", "unavailable", self.backend, None, exc.message)
        detail = f"{self._display_url} index {self.index} ({count} chunks, Elasticsearch {self._server_version})"
        if self._warnings:
            return ComponentHealth("store", "degraded", self.backend, None, f"{detail}; {'; '.join(self._warnings)}")
        return ComponentHealth("store", "ok", self.backend, None, detail)

    # --- embedding identity --------------------------------------------------------------------
    async def embedding_identity(self) -> EmbeddingIdentity | None:
        await self._ready()
        return await self._stored_identity()

    async def _claim_identity_locked(self, identity: EmbeddingIdentity) -> None:
        stored = await self._stored_identity()
        if stored is not None:
            stored.check_accepts(identity)
        if stored is not None and stored.model:
            return
        meta = {
            "carrag_schema": SCHEMA_VERSION,
            "embedding_model": identity.model,
            "embedding_dimension": identity.dimension,
        }
        try:
            with self._errors("recording the embedding model"):
                await self.client.indices.put_mapping(
                    index=self.index, meta=meta, properties={"embedding": embedding_property(identity.dimension)}
                )
        except UpstreamError:
            # another process added the field first, with another dimension
            stored = await self._stored_identity()
            if stored is not None and stored.dimension != identity.dimension:
                raise EmbeddingModelMismatch(stored.describe(), identity.describe()) from None
            raise

    # --- writes --------------------------------------------------------------------------------
    async def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbeddingIdentity,
    ) -> str | None:
        matrix = checked_vectors(chunks, vectors, identity)
        # Shielded: once started, a write completes or rolls back even if its caller is cancelled.
        return await asyncio.shield(self._write_document(document, list(chunks), matrix, identity))

    async def _write_document(
        self, document: DocumentRecord, chunks: list[Chunk], matrix: np.ndarray, identity: EmbeddingIdentity
    ) -> str | None:
        async with self._exclusive():
            await self._ensure_index_locked()
            await self._settle_locked()
            await self._claim_identity_locked(identity)
            replaced = await self._find_record("source_id", document.source_id)
            new_ids = [chunk_id(document.document_id, chunk.chunk_index) for chunk in chunks]
            actions = [
                {
                    "_op_type": "index",
                    "_index": self.index,
                    "_id": doc_id,
                    "_source": _chunk_source(document, chunk, vector),
                }
                for doc_id, chunk, vector in zip(new_ids, chunks, matrix, strict=True)
            ]
            new_ids.append(document.document_id)
            actions.append(
                {
                    "_op_type": "index",
                    "_index": self.index,
                    "_id": document.document_id,
                    "_source": _record_source(document, len(chunks)),
                }
            )
            old_ids = set(await self._ids_of(replaced.document_id)) if replaced is not None else set()
            old_ids.difference_update(new_ids)
            if not self._index_ready:  # deleted under us: a bulk now would auto-create it unmapped
                raise _IndexMissing(self.index)

            await self._index_all_or_nothing(actions, new_ids, document)
            # The new version is complete (still invisible); now retire the old one and show both
            # changes in one refresh. Deletes that fail stay owed and run before any later refresh.
            self._pending_deletes.update(old_ids)
            self._refresh_due = True
            await self._settle_locked()
            return replaced.document_id if replaced is not None else None

    async def _index_all_or_nothing(
        self, actions: list[dict[str, Any]], new_ids: list[str], document: DocumentRecord
    ) -> None:
        action = f"indexing {document.filename}"
        try:
            failures = await self._bulk(actions, action)
        except CarragError:
            await self._roll_back(new_ids)
            raise
        if failures:
            await self._roll_back(new_ids)
            raise self._bulk_failure(failures, len(actions), action, "; nothing of the document was stored")

    async def _roll_back(self, new_ids: list[str]) -> None:
        """Delete what was written of a failed version before anything is refreshed."""
        self._pending_deletes.update(new_ids)
        try:
            await self._settle_locked()
        except CarragError as exc:  # still owed; runs before the next refresh
            logger.warning("rollback of a failed write deferred", extra={"reason": exc.message})

    async def delete_document(self, document_id: str) -> bool:
        return await asyncio.shield(self._delete_document(document_id))

    async def _delete_document(self, document_id: str) -> bool:
        async with self._exclusive():
            await self._ensure_index_locked()
            await self._settle_locked()
            record = await self._find_record("document_id", document_id)
            ids = await self._ids_of(document_id)
            if not ids:
                return False
            self._pending_deletes.update(ids)
            await self._settle_locked()
            return record is not None

    async def wipe(self) -> None:
        async with self._exclusive():
            with self._errors(f"deleting the index {self.index}"):
                await self.client.indices.delete(index=self.index, ignore_unavailable=True)
            self._index_ready = False
            self._pending_deletes.clear()
            self._refresh_due = False
            await self._ensure_index_locked()

    async def _ids_of(self, document_id: str) -> list[str]:
        """The ids of every chunk and record of ``document_id`` (refreshed state)."""
        hits, _ = await self._walk(
            "finding a document's chunks",
            {"term": {"document_id": document_id}},
            [{"chunk_index": {"order": "asc", "missing": "_last"}}, {"doc_kind": "asc"}],
            source=False,
        )
        return [hit["_id"] for hit in hits]

    # --- document reads ------------------------------------------------------------------------
    async def _find_record(self, field: str, value: str) -> DocumentRecord | None:
        response = await self._search(
            "looking up a document",
            query={"bool": {"filter": [{"term": {"doc_kind": "document"}}, {"term": {field: value}}]}},
            sort=[{"created_at": "desc"}, {"document_id": "asc"}],
            size=1,
        )
        hits = response["hits"]["hits"]
        return _to_document(hits[0]["_source"]) if hits else None

    async def get_document(self, document_id: str) -> DocumentRecord | None:
        return await self._find_record("document_id", document_id)

    async def find_by_source(self, source_id: str) -> DocumentRecord | None:
        return await self._find_record("source_id", source_id)

    async def list_documents(self, *, offset: int, limit: int, tag: str | None = None) -> DocumentPage:
        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if tag is not None:
            filters.append({"term": {"tags.keyword": tag}})
        hits, total = await self._walk(
            "listing documents",
            {"bool": {"filter": filters}},
            [{"created_at": "desc"}, {"document_id": "asc"}],
            offset=offset,
            limit=limit,
        )
        return DocumentPage([_to_document(hit["_source"]) for hit in hits], total)

    async def list_sources(self) -> list[tuple[str, str]]:
        hits, _ = await self._walk(
            "listing sources",
            {"term": {"doc_kind": "document"}},
            [{"source_id": "asc"}, {"document_id": "asc"}],
            source_includes=["source_id", "source_type"],
        )
        return [(hit["_source"]["source_id"], hit["_source"]["source_type"]) for hit in hits]

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        hits, _ = await self._walk(
            "listing a document's chunks",
            {"bool": {"filter": [{"term": {"doc_kind": "chunk"}}, {"term": {"document_id": document_id}}]}},
            [{"chunk_index": "asc"}],
            offset=offset,
            limit=limit,
            source_excludes=_CHUNK_SOURCE_EXCLUDES,
        )
        if not hits:
            return []
        identity = await self._stored_identity()
        dimension = identity.dimension if identity else 0  # every vector has the mapping's dims
        return [ChunkListing(_to_chunk(hit["_source"]), dimension) for hit in hits]

    async def count_chunks(self) -> int:
        await self._ready()
        try:
            with self._errors("counting chunks"):
                response = await self.client.count(index=self.index, query={"term": {"doc_kind": "chunk"}})
        except _IndexMissing:
            return 0
        return int(response["count"])

    async def check_integrity(self) -> list[str]:
        """Everything that would make the store inconsistent, as readable lines (empty: consistent):
        each record's ``chunk_count`` against its chunks (indexes 0..n-1), chunks without a record,
        chunks without a vector, two records for one source, and deletes still owed."""
        problems = [f"{len(self._pending_deletes)} deletes are still owed"] if self._pending_deletes else []
        hits, _ = await self._walk(
            "checking integrity",
            {"term": {"doc_kind": "document"}},
            [{"document_id": "asc"}],
            source_includes=["document_id", "source_id", "chunk_count"],
        )
        declared = {hit["_source"]["document_id"]: hit["_source"]["chunk_count"] for hit in hits}
        sources: dict[str, int] = {}
        for hit in hits:
            sources[hit["_source"]["source_id"]] = sources.get(hit["_source"]["source_id"], 0) + 1
        problems += [f"source {source} has {count} documents" for source, count in sources.items() if count > 1]
        actual: dict[str, tuple[int, int, int]] = {}
        after: dict[str, Any] | None = None
        while True:
            composite: dict[str, Any] = {"size": 1000, "sources": [{"id": {"terms": {"field": "document_id"}}}]}
            if after:
                composite["after"] = after
            response = await self._search(
                "checking integrity",
                query={"term": {"doc_kind": "chunk"}},
                size=0,
                aggregations={
                    "documents": {
                        "composite": composite,
                        "aggregations": {
                            "low": {"min": {"field": "chunk_index"}},
                            "high": {"max": {"field": "chunk_index"}},
                        },
                    }
                },
            )
            aggregation = response.get("aggregations", {}).get("documents", {})
            for bucket in aggregation.get("buckets", []):
                actual[bucket["key"]["id"]] = (
                    bucket["doc_count"],
                    int(bucket["low"]["value"]),
                    int(bucket["high"]["value"]),
                )
            after = aggregation.get("after_key")
            if not aggregation.get("buckets") or not after:
                break
        for document_id, count in declared.items():
            chunks, low, high = actual.get(document_id, (0, 0, -1))
            if chunks != count:
                problems.append(f"document {document_id} declares {count} chunks but has {chunks}")
            elif chunks and (low, high) != (0, chunks - 1):
                problems.append(f"document {document_id} has chunk indexes {low}..{high} for {chunks} chunks")
        orphans = sum(count for document_id, (count, _, _) in actual.items() if document_id not in declared)
        if orphans:
            problems.append(f"{orphans} chunks belong to no document")
        missing = await self._search(
            "checking integrity",
            size=0,
            track_total_hits=True,
            query={"bool": {"filter": {"term": {"doc_kind": "chunk"}}, "must_not": {"exists": {"field": "embedding"}}}},
        )
        if missing["hits"]["total"]["value"]:
            problems.append(f"{missing['hits']['total']['value']} chunks lack a vector")
        return problems

    # --- search legs ---------------------------------------------------------------------------
    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        # The same term selection as the SQLite leg (stopwords dropped, at most 64 terms); the
        # english analyzer then stems them as FTS5's porter tokenizer does.
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        response = await self._search(
            "searching (BM25)",
            query={
                "bool": {
                    "must": {"multi_match": {"query": " ".join(terms), "fields": BM25_FIELDS, "type": "most_fields"}},
                    "filter": _filter_clauses(filters),
                }
            },
            size=min(k, MAX_RESULT_WINDOW),
            source_excludes=_CHUNK_SOURCE_EXCLUDES,
        )
        return [ScoredChunk(_to_chunk(hit["_source"]), float(hit["_score"])) for hit in response["hits"]["hits"]]

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0:
            return []
        k = min(k, MAX_NUM_CANDIDATES)
        knn = {
            "field": "embedding",
            "query_vector": np.asarray(vector, dtype=np.float32).tolist(),
            "k": k,
            "num_candidates": min(max(self.num_candidates, k), MAX_NUM_CANDIDATES),
            "filter": _filter_clauses(filters),
        }
        try:
            response = await self._search("searching (kNN)", knn=knn, size=k, source_excludes=_CHUNK_SOURCE_EXCLUDES)
        except UpstreamError:
            if await self._stored_identity() is None:  # nothing was ever embedded: no vector field yet
                return []
            raise
        # Elasticsearch scores cosine as (1 + cos) / 2; report the cosine itself, like SQLite.
        return [
            ScoredChunk(_to_chunk(hit["_source"]), 2.0 * float(hit["_score"]) - 1.0) for hit in response["hits"]["hits"]
        ]

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        unique = list(dict.fromkeys(centres))
        if not unique:
            return []
        windows = [
            {
                "bool": {
                    "filter": [
                        {"term": {"document_id": document_id}},
                        {"range": {"chunk_index": {"gte": index - radius, "lte": index + radius}}},
                    ]
                }
            }
            for document_id, index in unique
        ]
        response = await self._search(
            "fetching neighbouring chunks",
            query={
                "bool": {
                    "filter": [
                        {"term": {"doc_kind": "chunk"}},
                        {"bool": {"should": windows, "minimum_should_match": 1}},
                    ]
                }
            },
            sort=[{"document_id": "asc"}, {"chunk_index": "asc"}],
            size=min(len(unique) * (2 * max(radius, 0) + 1), MAX_RESULT_WINDOW),
            source_excludes=_CHUNK_SOURCE_EXCLUDES,
        )
        return [_to_chunk(hit["_source"]) for hit in response["hits"]["hits"]]

"""The client side of the Elasticsearch adapter: one lazily created client, the mapping of its
exceptions onto Carrag's (unreachable or overloaded → 503, rejected → 502), and bulk requests
that report each item's outcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
from elasticsearch import ApiError, AsyncElasticsearch, NotFoundError, TransportError, UnsupportedProductError
from elasticsearch.serializer import JsonSerializer, NdjsonSerializer

from carrag.services.errors import CarragError, DependencyUnavailable, UpstreamError

logger = logging.getLogger(__name__)

PAGE = 1000  # hits or buckets per request when walking a whole index
WRITE_TIMEOUT_FACTOR = 4  # bulk requests (which build the HNSW graph) and refresh waits get longer
BULK_RETRIES = 2  # items rejected with 429 (queue full) are sent again, after a backoff
BULK_BACKOFF = 0.5
BULK_IN_FLIGHT = 8  # bulk requests one store sends at once, whatever the number or size of the writes
Operation = tuple[dict[str, Any], dict[str, Any] | None]  # a bulk action line and its source (None: a delete)


class OrjsonFirstSerializer(JsonSerializer):
    """orjson, and the standard library for what it refuses (a lone surrogate, an integer past 64 bits, a
    non-string key): the client's own `OrjsonSerializer` has no such fallback and no NDJSON variant."""

    def json_dumps(self, data: Any) -> bytes:
        try:
            return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)
        except orjson.JSONEncodeError:
            return super().json_dumps(data)

    def json_loads(self, data: bytes) -> Any:
        return orjson.loads(data)


class OrjsonFirstNdjsonSerializer(OrjsonFirstSerializer, NdjsonSerializer):
    """Bulk bodies (``application/x-ndjson``): the store's writes and ``helpers.async_bulk`` alike."""


def client_options() -> dict[str, Any]:
    """The serializers of every Elasticsearch client (the bench's raw client's too)."""
    return {
        "serializers": {
            "application/json": OrjsonFirstSerializer(),
            "application/x-ndjson": OrjsonFirstNdjsonSerializer(),
        }
    }


class IndexMissing(DependencyUnavailable):
    """The index vanished (someone is wiping it): reads see an empty store, a write fails with 503."""

    def __init__(self, index: str) -> None:
        super().__init__("store", f"the Elasticsearch index {index} was deleted by someone else; retry")


@dataclass(slots=True)
class BulkItem:
    op_type: str
    id: str
    status: int  # the item's HTTP status
    reason: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def redacted(url: str) -> str:
    """The URL without credentials, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])) if "@" in parts.netloc else url


def api_reason(exc: ApiError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):
        root = (error.get("root_cause") or [error])[0]
        return f"{root.get('type', 'error')}: {root.get('reason', '')}".strip()
    return str(exc.message or error or exc)


def api_status(exc: ApiError) -> int:
    return exc.meta.status if exc.meta is not None else 0


class Connection:
    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.hosts = [host.strip() for host in url.split(",") if host.strip()]  # several nodes: comma-separated
        self.timeout = timeout
        self.display_url = ",".join(redacted(host) for host in self.hosts) or redacted(url)
        self._api_key = api_key or None
        self._basic_auth = (username, password or "") if username else None
        self._client: AsyncElasticsearch | None = None
        self._bulk_slots = asyncio.Semaphore(BULK_IN_FLIGHT)

    @property
    def client(self) -> AsyncElasticsearch:
        """Created on first use, so a malformed URL is reported like an unreachable node."""
        if self._client is None:
            try:
                self._client = AsyncElasticsearch(
                    self.hosts,
                    api_key=self._api_key,
                    basic_auth=self._basic_auth,
                    request_timeout=self.timeout,
                    max_retries=1,
                    retry_on_timeout=False,
                    **client_options(),
                )
            except ValueError as exc:
                raise DependencyUnavailable(
                    "store", f"ELASTICSEARCH_URL {self.display_url!r} is not usable: {exc}"
                ) from exc
        return self._client

    @property
    def writer(self) -> AsyncElasticsearch:
        return self.client.options(request_timeout=self.timeout * WRITE_TIMEOUT_FACTOR)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        # reopened later, maybe from another event loop: a semaphore stays bound to the loop it first waited in
        self._bulk_slots = asyncio.Semaphore(BULK_IN_FLIGHT)

    @contextlib.contextmanager
    def errors(self, action: str, index: str) -> Iterator[None]:
        """Map the client's exceptions onto the domain's: unreachable or overloaded → 503."""
        try:
            yield
        except CarragError:
            raise
        except UnsupportedProductError as exc:
            raise DependencyUnavailable(
                "store", f"{self.display_url} did not answer as Elasticsearch while {action}"
            ) from exc
        except ApiError as exc:
            status = api_status(exc)
            if status == 404 and "index_not_found" in api_reason(exc):
                raise IndexMissing(index) from exc
            if status in (401, 403) and "cluster_block" not in api_reason(exc):
                raise DependencyUnavailable(
                    "store",
                    f"Elasticsearch at {self.display_url} refused access ({status}) while {action}; check "
                    "ELASTICSEARCH_API_KEY or ELASTICSEARCH_USERNAME/ELASTICSEARCH_PASSWORD",
                ) from exc
            if status in (403, 429) or status >= 500:  # 403 here: a write block (reindex swapping the alias)
                raise DependencyUnavailable(
                    "store",
                    f"Elasticsearch at {self.display_url} could not serve {action} ({status} {api_reason(exc)})",
                ) from exc
            raise UpstreamError(f"Elasticsearch rejected {action} ({status} {api_reason(exc)})") from exc
        except TransportError as exc:
            raise DependencyUnavailable(
                "store", f"Elasticsearch at {self.display_url} is unreachable while {action}: {exc.message}"
            ) from exc

    async def get(self, action: str, index: str, doc_id: str, **options: Any) -> Any | None:
        """A document read in real time; None when it does not exist (a missing index raises `IndexMissing`)."""
        with self.errors(action, index):
            try:
                return await self.client.get(index=index, id=doc_id, **options)
            except NotFoundError as exc:
                if "index_not_found" in str(exc.body):
                    raise
                return None

    async def found(self, action: str, index: str, **request: Any) -> list[dict[str, Any]]:
        with self.errors(action, index):
            response = await self.client.mget(index=index, realtime=True, **request)
        return [doc for doc in response["docs"] if doc.get("found")]

    async def create_index(self, action: str, index: str, **body: Any) -> None:
        """Create ``index`` unless it exists (another process may be creating it)."""
        with self.errors(action, index):
            try:
                await self.client.indices.create(index=index, **body)
            except ApiError as exc:
                if "resource_already_exists" not in api_reason(exc):
                    raise

    async def conditionally(self, action: str, index: str, write: Awaitable[Any]) -> Any | None:
        """A conditional write (``if_seq_no``/``if_primary_term``); None when the document changed or
        vanished since it was read (409, 404), so the caller reads it again."""
        try:
            with self.errors(action, index):
                return await write
        except CarragError as exc:
            changed = isinstance(exc.__cause__, ApiError) and api_status(exc.__cause__) in (404, 409)
            if changed and not isinstance(exc, IndexMissing):
                return None
            raise

    async def bulk(
        self,
        operations: list[Operation],
        *,
        index: str,
        action: str,
        refresh: str | bool = False,
        require_alias: bool = True,
    ) -> list[BulkItem]:
        """Send the operations in one request; every item's outcome, in order. Items refused with 429 are
        sent again (twice, after a backoff); other item failures are reported, a failed request raises."""
        results: list[BulkItem | None] = [None] * len(operations)
        pending = list(range(len(operations)))
        for attempt in range(BULK_RETRIES + 1):
            body = [part for position in pending for part in operations[position] if part is not None]
            async with self._bulk_slots:
                with self.errors(action, index):
                    # require_alias: a bulk into a vanished alias must fail, not auto-create a plain index
                    response = await self.writer.bulk(
                        operations=body, index=index, refresh=refresh, require_alias=require_alias
                    )
            retry = []
            for position, entry in zip(pending, response["items"], strict=True):
                item = _bulk_item(entry)
                if "index_not_found" in item.reason:
                    raise IndexMissing(index)
                results[position] = item
                if item.status == 429 and attempt < BULK_RETRIES:
                    retry.append(position)
            if not retry:
                break
            pending = retry
            await asyncio.sleep(BULK_BACKOFF * (attempt + 1))
        return [item for item in results if item is not None]

    async def bulk_together(self, operations: list[Operation], **options: Any) -> list[BulkItem]:
        """`bulk` in requests of ``PAGE`` operations, sent together (at most ``BULK_IN_FLIGHT`` at once)."""
        parts = (operations[low : low + PAGE] for low in range(0, len(operations), PAGE))
        answers = await asyncio.gather(*(self.bulk(part, **options) for part in parts))
        return [item for answer in answers for item in answer]

    async def delete_ids(
        self, ids: list[str], *, index: str, action: str, refresh: str | bool = False, require_alias: bool = True
    ) -> bool:
        """Delete by id, ``PAGE`` ids a request (one already gone counts as deleted); False, logged, when
        a delete failed."""
        deletes: list[Operation] = [({"delete": {"_id": i}}, None) for i in ids]
        try:
            items = await self.bulk_together(
                deletes, index=index, action=action, refresh=refresh, require_alias=require_alias
            )
        except CarragError as exc:
            logger.warning("deletes failed", extra={"action": action, "ids": len(ids), "reason": exc.message})
            return False
        failed = [item for item in items if not item.ok and item.status != 404]
        if failed:
            logger.warning("deletes failed", extra={"action": action, "failed": len(failed)})
        return not failed


def _bulk_item(entry: dict[str, Any]) -> BulkItem:
    op_type, item = next(iter(entry.items()))
    error = item.get("error") or {}
    reason = f"{error.get('type', 'error')}: {error.get('reason', '')}" if isinstance(error, dict) else str(error)
    return BulkItem(op_type, str(item.get("_id")), int(item.get("status", 500)), reason if error else "")


def bulk_failure(failures: list[BulkItem], total: int, action: str, consequence: str = "") -> CarragError:
    first = failures[0]
    message = (
        f"Elasticsearch failed {len(failures)} of {total} operations while {action} "
        f"(first: {first.status} {first.reason}){consequence}"
    )
    if any(f.status == 429 or f.status >= 500 for f in failures):
        return DependencyUnavailable("store", message)
    return UpstreamError(message)


def failures_by_owner(owners: list[Any], results: list[BulkItem]) -> dict[Any, list[BulkItem]]:
    """The failed items of a bulk request, grouped by the owner of each operation (``owners[i]``)."""
    failures: dict[Any, list[BulkItem]] = {}
    for owner, result in zip(owners, results, strict=True):
        if not result.ok:
            failures.setdefault(owner, []).append(result)
    return failures


async def every_hit(client: AsyncElasticsearch, index: str, **request: Any) -> AsyncIterator[dict[str, Any]]:
    """Every hit of a search, ``PAGE`` at a time by ``search_after`` (``sort`` must end in a unique field)."""
    after: list[Any] | None = None
    while True:
        response = await client.search(index=index, size=PAGE, search_after=after, **request)
        hits = response["hits"]["hits"]
        for hit in hits:
            yield hit
        if len(hits) < PAGE:
            return
        after = hits[-1]["sort"]


async def every_bucket(
    client: AsyncElasticsearch, index: str, query: dict[str, Any], field: str, **aggregations: Any
) -> AsyncIterator[dict[str, Any]]:
    """Every bucket of a composite aggregation of ``field`` over ``query``, with ``aggregations`` inside."""
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {"size": PAGE, "sources": [{"key": {"terms": {"field": field}}}]}
        if after:
            composite["after"] = after
        response = await client.search(
            index=index,
            query=query,
            size=0,
            aggregations={"all": {"composite": composite, "aggregations": aggregations}},
        )
        found = response.get("aggregations", {}).get("all", {})
        for bucket in found.get("buckets", []):
            yield bucket
        after = found.get("after_key")
        if not found.get("buckets") or not after:
            return

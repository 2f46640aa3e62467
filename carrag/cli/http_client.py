"""`HttpClient`: the `CarragClient` interface over a running server's HTTP API (``--url``), ingesting
through the async jobs API."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx

from carrag.api.schemas.collections import CollectionDeleted, CollectionListOut, CollectionOut
from carrag.api.schemas.documents import (
    ChunkPageOut,
    DeletedSourceOut,
    DeleteResponse,
    DocumentOut,
    DocumentPageOut,
    ResetResponse,
)
from carrag.api.schemas.health import HealthOut
from carrag.api.schemas.ingest import IngestResponse
from carrag.api.schemas.jobs import JobListOut, JobOut
from carrag.api.schemas.query import QueryRequest, SearchRequest, SearchResponse, stream_payload
from carrag.cli.client import (
    JOB_POLL_SECONDS,
    ClientError,
    DocumentListing,
    IngestSettings,
    OpenDestination,
    ProgressCallback,
    StreamEvent,
    SyncProgress,
    SyncTarget,
)
from carrag.services.vocabulary import FINISHED_JOB_STATES


class HttpClient:
    """A running server at ``base_url``; ``api_key`` is sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout, connect=10.0)
        )

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach {self.base_url}: {error}", fatal=True) from error
        if response.status_code >= 400:
            raise http_error(response)
        return response

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return (await self._request(method, path, **kwargs)).json()

    async def _ingest(self, path: str, on_progress: ProgressCallback, **kwargs: Any) -> IngestResponse:
        """Start an async ingest job and follow it; a server without jobs answers synchronously."""
        response = await self._request("POST", path, params={"async": "true"}, **kwargs)
        body = response.json()
        if response.status_code != 202:
            return IngestResponse.model_validate(body)
        job_url = body.get("status_url") or f"/jobs/{body['job_id']}"
        job = await self._follow(job_url, lambda job: on_progress(job.state, job.progress.done, job.progress.total))
        if job.state == "done" and job.result is not None:
            return job.result
        raise ClientError(job.error or f"the ingest job was {job.state}")

    async def _follow(self, job_url: str, on_job: SyncProgress) -> JobOut:
        """Poll the job until it finishes; cancelled (Ctrl-C), cancel it on the server (best effort)."""
        try:
            while True:
                job = JobOut.model_validate(await self._json("GET", job_url))
                on_job(job)
                if job.state in FINISHED_JOB_STATES:
                    return job
                await asyncio.sleep(JOB_POLL_SECONDS)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._http.delete(job_url))
            raise

    async def ingest_file(
        self, path: Path, source_id: str, options: IngestSettings, on_progress: ProgressCallback
    ) -> IngestResponse:
        form = {"source_id": source_id, "tags": ",".join(options.tags), "force": str(options.force).lower()}
        form |= _when_set(options)
        if options.metadata:
            form["metadata"] = json.dumps(options.metadata)
        with path.open("rb") as handle:
            return await self._ingest("/ingest/file", on_progress, data=form, files={"file": (path.name, handle)})

    async def ingest_url(self, url: str, options: IngestSettings, on_progress: ProgressCallback) -> IngestResponse:
        body = {"url": url, "tags": options.tags, "force": options.force, "metadata": options.metadata}
        return await self._ingest("/ingest/url", on_progress, json=body | _when_set(options))

    async def sync(self, target: SyncTarget, options: IngestSettings, on_progress: SyncProgress) -> JobOut:
        """POST /sync (a folder the server can read) or POST /ingest/url with ``crawl``, then follow the job."""
        body: dict[str, Any] = {"tags": options.tags, "metadata": options.metadata, **_when_set(options)}
        if target.crawl is not None:
            crawl = {"max_pages": target.crawl.max_pages, "max_depth": target.crawl.max_depth}
            path = "/ingest/url"
            body.update(
                url=target.source, force=options.force, crawl={**crawl, "same_prefix": target.crawl.same_prefix}
            )
        else:
            path = "/sync"
            body.update(path=target.source, globs=list(target.globs))
        return await self._follow((await self._json("POST", path, json=body))["status_url"], on_progress)

    async def list_documents(self, listing: DocumentListing) -> DocumentPageOut:
        params = {name: value for name, value in dataclasses.asdict(listing).items() if value not in (None, "")}
        return DocumentPageOut.model_validate(await self._json("GET", "/documents", params=params))

    async def get_document(self, document_id: str) -> DocumentOut:
        return DocumentOut.model_validate(await self._json("GET", f"/documents/{_segment(document_id)}"))

    async def find_documents(
        self, reference: str, *, limit: int = 10, collection: str | None = None
    ) -> DocumentPageOut:
        params = {"ref": reference, "limit": limit, **({"collection": collection} if collection else {})}
        return DocumentPageOut.model_validate(await self._json("GET", "/documents", params=params))

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 100) -> ChunkPageOut:
        path = f"/documents/{_segment(document_id)}/chunks"
        return ChunkPageOut.model_validate(await self._json("GET", path, params={"offset": offset, "limit": limit}))

    async def delete_document(self, document_id: str) -> DeleteResponse:
        return DeleteResponse.model_validate(await self._json("DELETE", f"/documents/{_segment(document_id)}"))

    async def delete_by_source(self, source_id: str, collection: str | None = None) -> DeletedSourceOut:
        params = {"source_id": source_id, **({"collection": collection} if collection else {})}
        return DeletedSourceOut.model_validate(await self._json("DELETE", "/documents", params=params))

    async def reset(self) -> ResetResponse:
        return ResetResponse.model_validate(await self._json("POST", "/admin/reset", json={"confirm": True}))

    async def health(self) -> HealthOut:
        return HealthOut.model_validate(await self._json("GET", "/health"))

    async def list_jobs(self, *, limit: int = 50) -> JobListOut:
        return JobListOut.model_validate(await self._json("GET", "/jobs", params={"limit": limit}))

    async def list_collections(self) -> CollectionListOut:
        return CollectionListOut.model_validate(await self._json("GET", "/collections"))

    async def create_collection(self, name: str) -> CollectionOut:
        return CollectionOut.model_validate(await self._json("POST", "/collections", json={"name": name}))

    async def rename_collection(self, name: str, new_name: str) -> CollectionOut:
        path = f"/collections/{_segment(name)}"
        return CollectionOut.model_validate(await self._json("PATCH", path, json={"name": new_name}))

    async def delete_collection(self, name: str) -> CollectionDeleted:
        return CollectionDeleted.model_validate(await self._json("DELETE", f"/collections/{_segment(name)}"))

    async def search(self, request: SearchRequest) -> SearchResponse:
        body = request.model_dump(mode="json", exclude_unset=True)
        return SearchResponse.model_validate(await self._json("POST", "/search", json=body))

    async def stream_query(self, request: QueryRequest) -> AsyncGenerator[StreamEvent]:
        from httpx_sse import aconnect_sse

        body = request.model_dump(mode="json", exclude_unset=True)
        try:
            async with aconnect_sse(self._http, "POST", "/query/stream", json=body) as source:
                if source.response.status_code >= 400:
                    await source.response.aread()
                    raise http_error(source.response)
                async for event in source.aiter_sse():
                    if event.event in ("sources", "token", "done", "error"):
                        yield (event.event, stream_payload(event.event, json.loads(event.data)))
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach {self.base_url}: {error}", fatal=True) from error

    async def download_original(self, document_id: str, open_destination: OpenDestination) -> tuple[str, int]:
        """GET /documents/{id}/file, streamed to ``open_destination(its file name)``; (file name, bytes)."""
        try:
            async with self._http.stream("GET", f"/documents/{_segment(document_id)}/file") as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise http_error(response)
                filename = disposition_filename(response.headers.get("content-disposition", "")) or document_id
                destination = open_destination(filename)
                written = 0
                async for piece in response.aiter_bytes():
                    destination.write(piece)
                    written += len(piece)
                return filename, written
        except httpx.HTTPError as error:
            raise ClientError(f"cannot reach {self.base_url}: {error}", fatal=True) from error

    async def aclose(self) -> None:
        await self._http.aclose()


AUTH_HINT = "pass a key with --api-key or set CARRAG_API_KEY (the server's API_KEYS)"


def http_error(response: httpx.Response) -> ClientError:
    """The server's error as a ClientError; a refused or missing key (401/403) says how to give one."""
    status = response.status_code
    detail = _detail(response)
    if status == 401:
        detail = f"{detail} (HTTP 401): {AUTH_HINT}"
    elif status == 403:
        detail = f"{detail} (HTTP 403): this key may not do that; {AUTH_HINT}"
    return ClientError(detail, status, fatal=status in (401, 403))


def _when_set(options: IngestSettings) -> dict[str, str]:
    """The options sent only when they are set."""
    return {name: value for name in ("chunking", "collection") if (value := getattr(options, name))}


def _segment(value: str) -> str:
    return quote(value, safe="")


def disposition_filename(header: str) -> str | None:
    """The file name of a Content-Disposition header (``filename*=UTF-8''…`` first, then ``filename=``)."""
    parts = [part.strip() for part in header.split(";")]
    for part in parts:
        if part.lower().startswith("filename*=") and "''" in part:
            return unquote(part.split("''", 1)[1])
    for part in parts:
        if part.lower().startswith("filename="):
            return part.split("=", 1)[1].strip('"')
    return None


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, list):  # FastAPI validation errors
        detail = "; ".join(f"{'.'.join(str(p) for p in item.get('loc', [])[1:])}: {item.get('msg')}" for item in detail)
    return str(detail or f"HTTP {response.status_code}: {response.text[:200]}")

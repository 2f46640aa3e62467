"""ASGI middleware: request ids, the API key gate, the request body budget (size, pace), access log and HTTP metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from carrag.api.deps import UNAUTHORIZED_DETAIL, authenticate
from carrag.api.log_config import request_id_var
from carrag.services.errors import PayloadTooLarge
from carrag.services.telemetry.prometheus import UNMATCHED_ROUTE, PrometheusTelemetry

access_logger = logging.getLogger("carrag.access")

REQUEST_ID_HEADER = "x-request-id"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._\-]{1,128}$")


async def send_json_error(send: Send, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """A whole ``{"detail": ...}`` response from ASGI code that runs outside FastAPI's handlers."""
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_unauthorized(send: Send) -> None:
    await send_json_error(send, 401, UNAUTHORIZED_DETAIL, [(b"www-authenticate", b"Bearer")])


class ApiKeyGateMiddleware:
    """When API_KEYS is set, refuse a request that may carry a body (any method but GET, HEAD and
    OPTIONS) without a valid ``Authorization: Bearer`` key *before* its body is read.

    The per-route check (`carrag.api.deps.require_api_key`, the same `authenticate`) stays the
    authority and also covers GET routes, but FastAPI reads and parses a request body before it
    runs dependencies, so without this gate an anonymous client could make the service spool and
    parse uploads up to MAX_UPLOAD_BYTES only to be told 401. OPTIONS passes (CORS preflight carries no credentials).
    """

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in self.SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        container = getattr(scope["app"].state, "container", None)
        if container is None or authenticate(container.settings, Headers(scope=scope)) is not None:
            await self.app(scope, receive, send)
            return
        await send_unauthorized(send)


class BodyBudgetMiddleware:
    """A request body's budget: its size and the pace it arrives at.

    Size: a body over the limit is refused with 413 before it is read, at once when Content-Length
    says so, otherwise as soon as the streamed bytes pass the limit. JSON and url-encoded form bodies
    get the smaller ``max_json_bytes`` limit: they are parsed whole into Python objects, which costs
    many times their size in memory; everything else (multipart uploads) gets ``max_bytes``.
    ``max_bytes_setting`` / ``max_json_bytes_setting`` say, in the 413's detail, which setting the
    limit comes from (the number alone may not be the setting's).

    Pace: while the body is incomplete, each wait for its next part is bounded by ``read_timeout``
    seconds (BODY_READ_TIMEOUT_SECONDS); a client that stalls, or declares more bytes than it sends,
    gets 408 instead of holding the request open.

    Either way the framework's own answer to the interrupted body (FastAPI turns any error while
    reading a form into a 400) is dropped and the client gets the 413 or 408, with the connection
    closed (the rest of the body is never read).
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        max_json_bytes: int | None = None,
        max_bytes_setting: str = "",
        max_json_bytes_setting: str = "",
        read_timeout: float = 15.0,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_json_bytes = max_json_bytes if max_json_bytes is not None else max_bytes
        self.max_bytes_setting = max_bytes_setting
        self.max_json_bytes_setting = max_json_bytes_setting
        self.read_timeout = read_timeout

    @staticmethod
    def parsed_whole(headers: dict[bytes, bytes]) -> bool:
        media_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        return (
            media_type == b"application/json"
            or media_type.endswith(b"+json")
            or (media_type == b"application/x-www-form-urlencoded")
        )

    def limit_for(self, headers: dict[bytes, bytes]) -> int:
        return self.max_json_bytes if self.parsed_whole(headers) else self.max_bytes

    def too_large(self, headers: dict[bytes, bytes]) -> str:
        setting = self.max_json_bytes_setting if self.parsed_whole(headers) else self.max_bytes_setting
        limit = self.limit_for(headers)
        return f"Request body is larger than {limit} bytes" + (f" ({setting})." if setting else ".")

    def too_slow(self) -> str:
        return f"The request body stalled: nothing arrived for {self.read_timeout:g} s (BODY_READ_TIMEOUT_SECONDS)."

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        limit = self.limit_for(headers)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._reject(send, 413, self.too_large(headers))
            return
        received = 0
        body_complete = False
        refusal: tuple[int, str] | None = None
        response_started = False

        async def budgeted_receive() -> Message:
            nonlocal received, body_complete, refusal
            if body_complete:  # from now on, only the disconnect is waited for
                return await receive()
            try:
                async with asyncio.timeout(self.read_timeout):
                    message = await receive()
            except TimeoutError:
                refusal = (408, self.too_slow())
                raise BodyStalled(refusal[1]) from None
            if message["type"] == "http.request":
                body_complete = not message.get("more_body", False)
                received += len(message.get("body", b""))
                if received > limit:
                    refusal = (413, self.too_large(headers))
                    raise PayloadTooLarge(refusal[1])
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if refusal is not None and not response_started:
                return  # whatever the app answers to a body cut short is replaced by the refusal below
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, budgeted_receive, guarded_send)
        except Exception:
            if refusal is None or response_started:
                raise
        if refusal is not None and not response_started:
            await self._reject(send, *refusal)

    @staticmethod
    async def _reject(send: Send, status: int, detail: str) -> None:
        await send_json_error(send, status, detail, [(b"connection", b"close")])


class BodyStalled(Exception):
    """The client sent nothing more of a body for BODY_READ_TIMEOUT_SECONDS."""


class RequestLogMiddleware:
    """The request id (a sane ``X-Request-ID`` from the client, else a new one: logged with, echoed back),
    one log line per request (method, path, status, duration_ms, request_id) and the HTTP metrics. Probe
    and scrape requests (PROBE_PATHS) are logged at DEBUG so they do not drown the log."""

    PROBE_PATHS = frozenset({"/health/live", "/health/ready", "/metrics"})

    def __init__(self, app: ASGIApp, metrics: PrometheusTelemetry) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        incoming = dict(scope["headers"]).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        request_id = incoming if _VALID_REQUEST_ID.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        token = request_id_var.set(request_id)
        status = 500  # unless the app answers

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (REQUEST_ID_HEADER.encode(), request_id.encode())]
            await send(message)

        self.metrics.requests_in_flight.inc()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)
            self.metrics.requests_in_flight.dec()
            seconds = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or UNMATCHED_ROUTE
            self.metrics.observe_request(scope["method"], route, status, seconds)
            path = scope.get("path", "")
            access_logger.log(
                logging.DEBUG if path in self.PROBE_PATHS else logging.INFO,
                "%s %s %s",
                scope["method"],
                path,
                status,
                extra={
                    "method": scope["method"],
                    "path": path,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                    "request_id": request_id,
                    "key_id": scope["state"].get("key_id"),
                    "client": (scope.get("client") or ("",))[0],
                },
            )

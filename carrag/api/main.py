"""The FastAPI application: wiring only. Routes live in `carrag/api/routes/`, work in `carrag/services/`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.routing import Route

from carrag import __version__, extras
from carrag.api.deps import UNAUTHORIZED_DETAIL, Unauthorized, require_api_key
from carrag.api.errors import install_error_handlers
from carrag.api.lifecycle import on_shutdown_signal
from carrag.api.log_config import configure_logging
from carrag.api.middleware import ApiKeyGateMiddleware, BodyBudgetMiddleware, RequestLogMiddleware
from carrag.api.routes import (
    admin,
    collections,
    documents,
    health,
    ingest,
    jobs,
    openai_compat,
    ops,
    pages,
    query,
    search,
    sync,
    ui,
)
from carrag.services.container import Container, build_container
from carrag.services.settings import Settings, get_settings
from carrag.services.telemetry.prometheus import PrometheusTelemetry

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

logger = logging.getLogger(__name__)

# Room for the multipart framing around an upload of exactly MAX_UPLOAD_BYTES.
MULTIPART_OVERHEAD = 64 * 1024


def create_app(settings: Settings | None = None, container: Container | None = None) -> FastAPI:
    """Build the app. A ready ``container`` (tests) is used as is and not closed on shutdown."""
    settings = settings or (container.settings if container else get_settings())
    # /metrics serves the Prometheus telemetry a ready container's services report to, else a new one for the
    # container the app builds (a container reporting elsewhere gets only the HTTP metrics)
    telemetry = container.telemetry if container is not None else None
    metrics = telemetry if isinstance(telemetry, PrometheusTelemetry) else PrometheusTelemetry()
    mcp = _mcp_transport(lambda: app.state.container, settings)

    @contextlib.asynccontextmanager
    async def serving(owned: Container) -> AsyncIterator[None]:
        """While the app serves: the MCP transport runs; SIGTERM starts draining ingests at once;
        shutdown drains the ingest jobs (SHUTDOWN_GRACE_SECONDS, then they are cancelled)."""
        grace = owned.settings.shutdown_grace_seconds
        with on_shutdown_signal(lambda: owned.jobs.begin_shutdown(grace)):
            async with mcp.run() if mcp is not None else contextlib.nullcontext():
                try:
                    yield
                finally:
                    await owned.jobs.shutdown(grace)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if container is not None:
            app.state.container = container
            async with serving(container):
                yield
            return
        configure_logging(settings.log_level, settings.log_json)
        app.state.container = await build_container(settings, telemetry=metrics)
        logger.info(
            "carrag started", extra={"store": settings.store, "embedder": settings.embedder, "llm": settings.llm}
        )
        try:
            async with serving(app.state.container):
                yield
        finally:
            await app.state.container.aclose()

    app = FastAPI(
        title="Carrag",
        version=__version__,
        summary="Self-hosted RAG: hybrid BM25 + kNN search, reranking, streamed cited answers.",
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    if container is not None:
        app.state.container = container
    install_error_handlers(app)
    ops.count_dependency_errors(app, metrics)

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, error: Unauthorized) -> JSONResponse:
        return JSONResponse(
            {"detail": UNAUTHORIZED_DETAIL},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    protected = [Depends(require_api_key)]
    # The hot route first: FastAPI finds a route by scanning the routers included before its own.
    app.include_router(search.router, dependencies=protected)
    app.include_router(health.router)
    app.include_router(ingest.router, dependencies=protected)
    app.include_router(sync.router, dependencies=protected)
    app.include_router(documents.router, dependencies=protected)
    app.include_router(pages.router, dependencies=protected)
    app.include_router(collections.router, dependencies=protected)
    app.include_router(admin.router, dependencies=protected)
    app.include_router(query.router, dependencies=protected)
    app.include_router(jobs.router, dependencies=protected)
    app.include_router(openai_compat.router, dependencies=protected)
    app.include_router(ops.router)  # /health/live and /health/ready are public; /metrics checks keys itself
    if mcp is not None:
        from carrag.api.mcp_server import McpEndpoint

        endpoint = McpEndpoint(mcp, lambda: app.state.container.settings)  # an ASGI app
        # POST only: the transport is stateless, so a GET would open an event stream nothing ever writes to
        # (held open until the client leaves) and a DELETE has no session to end; both are 405.
        app.router.routes.append(Route("/mcp", endpoint, methods=["POST"], include_in_schema=False))
    ui.mount(app)  # the web UI at / (public page; its API calls carry the user's key)

    app.add_middleware(ApiKeyGateMiddleware)  # inside CORS, so a 401 still carries CORS headers
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Request-ID"],
        )
    app.add_middleware(
        BodyBudgetMiddleware,
        max_bytes=settings.max_upload_bytes + MULTIPART_OVERHEAD,
        max_json_bytes=settings.max_json_body_bytes,
        max_bytes_setting=f"MAX_UPLOAD_BYTES plus {MULTIPART_OVERHEAD} bytes for the form's other fields",
        max_json_bytes_setting="MAX_JSON_BODY_BYTES",
        read_timeout=settings.body_read_timeout_seconds,
    )
    app.add_middleware(RequestLogMiddleware, metrics=metrics)
    return app


def _mcp_transport(container: Callable[[], Container], settings: Settings) -> StreamableHTTPSessionManager | None:
    """The /mcp session manager, or None without the ``mcp`` extra (then there is no /mcp endpoint)."""
    if not extras.installed("mcp"):
        logger.info("the mcp extra is not installed: no /mcp endpoint")
        return None
    from carrag.api.mcp_server import build_mcp_server, http_session_manager

    return http_session_manager(build_mcp_server(container), settings)


def app_factory() -> FastAPI:
    """Entry point for ``uvicorn --factory carrag.api.main:app_factory``."""
    return create_app()

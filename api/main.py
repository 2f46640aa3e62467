"""The FastAPI application: wiring only. Routes live in `api/routes/`, work in `services/`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from api.deps import Unauthorized, require_api_key
from api.errors import install_error_handlers
from api.log_config import configure_logging
from api.middleware import BodySizeLimitMiddleware, RequestIdMiddleware
from api.routes import documents, health, ingest, query, search
from services.container import Container, build_container
from services.settings import Settings, get_settings

logger = logging.getLogger(__name__)

# Room for the multipart framing around an upload of exactly MAX_UPLOAD_BYTES.
MULTIPART_OVERHEAD = 64 * 1024


def create_app(settings: Settings | None = None, container: Container | None = None) -> FastAPI:
    """Build the app. A ready ``container`` (tests) is used as is and not closed on shutdown."""
    settings = settings or (container.settings if container else get_settings())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if container is not None:
            app.state.container = container
            yield
            return
        configure_logging(settings.log_level, settings.log_json)
        app.state.container = await build_container(settings)
        logger.info("carrag started", extra={"store": settings.store, "embedder": settings.embedder, "llm": settings.llm})
        try:
            yield
        finally:
            await app.state.container.aclose()

    app = FastAPI(
        title="Carrag",
        version="0.1.0",
        summary="Self-hosted RAG: hybrid BM25 + kNN search, reranking, streamed cited answers.",
        lifespan=lifespan,
    )
    if container is not None:
        app.state.container = container
    install_error_handlers(app)

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, error: Unauthorized) -> JSONResponse:
        return JSONResponse(
            {"detail": "Missing or invalid API key: send Authorization: Bearer <key>."},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    protected = [Depends(require_api_key)]
    app.include_router(health.router)
    app.include_router(ingest.router, dependencies=protected)
    app.include_router(documents.router, dependencies=protected)
    app.include_router(query.router, dependencies=protected)
    app.include_router(search.router, dependencies=protected)

    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Request-ID"],
        )
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_upload_bytes + MULTIPART_OVERHEAD)
    app.add_middleware(RequestIdMiddleware)
    return app


def app_factory() -> FastAPI:
    """Entry point for ``uvicorn --factory api.main:app_factory``."""
    return create_app()

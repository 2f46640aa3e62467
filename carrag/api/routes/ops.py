"""Operations: ``GET /health/live`` (always 200), ``GET /health/ready`` (503 with the reasons when the
store or embedder is unusable or shutdown has begun) and ``GET /metrics`` (behind API_KEYS unless
METRICS_PUBLIC).
"""

from __future__ import annotations

import asyncio
import inspect

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from carrag.api.deps import ContainerDep, require_api_key
from carrag.api.json_body import JsonBodyRoute
from carrag.services.errors import CarragError, DependencyUnavailable
from carrag.services.telemetry import Telemetry

router = APIRouter(tags=["health"], route_class=JsonBodyRoute)

READINESS_TIMEOUT_SECONDS = 5.0


@router.get("/health/live", summary="Liveness: the process is serving (never calls a dependency)")
async def live() -> dict[str, str]:
    return {"status": "alive"}


@router.get(
    "/health/ready",
    summary="Readiness: store and embedder usable, not shutting down",
    responses={503: {"description": "Not ready; `reasons` says why."}},
)
async def ready(container: ContainerDep) -> JSONResponse:
    reasons: dict[str, str] = {}
    if not container.ingestion.accepting:
        reasons["service"] = "shutting down"
    try:
        async with asyncio.timeout(READINESS_TIMEOUT_SECONDS):
            store, embedder = await asyncio.gather(container.store.health(), container.embedder.health())
    except TimeoutError:
        reasons["health"] = f"store/embedder health checks took longer than {READINESS_TIMEOUT_SECONDS:.0f}s"
    else:
        for component in (store, embedder):
            if component.status == "unavailable":
                reasons[component.name] = component.detail or "unavailable"
    if reasons:
        detail = "Not ready: " + "; ".join(f"{name}: {why}" for name, why in reasons.items())
        return JSONResponse(
            {"status": "not_ready", "detail": detail, "reasons": reasons}, status_code=503, headers={"Retry-After": "1"}
        )
    return JSONResponse({"status": "ready"})


async def metrics_access(request: Request) -> None:
    if not request.app.state.container.settings.metrics_public:
        await require_api_key(request)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    description="Behind API_KEYS like the API, unless METRICS_PUBLIC is true.",
    dependencies=[Depends(metrics_access)],
    openapi_extra={"security": [{"HTTPBearer": []}]},
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text exposition format."}},
)
async def metrics(request: Request) -> Response:
    body, content_type = request.app.state.metrics.render()
    return Response(body, media_type=content_type)


def count_dependency_errors(app: FastAPI, telemetry: Telemetry) -> None:
    """Count every DependencyUnavailable answered to a client (store errors among them) in
    ``carrag_dependency_errors_total{component}``, then answer as `carrag.api.errors` does."""
    answer_domain_error = app.exception_handlers[CarragError]

    async def counted(request: Request, error: Exception) -> Response:
        if isinstance(error, DependencyUnavailable):
            telemetry.dependency_failed(error.component)
        answer = answer_domain_error(request, error)  # carrag.api.errors registers coroutines
        return await answer if inspect.isawaitable(answer) else answer

    app.add_exception_handler(DependencyUnavailable, counted)

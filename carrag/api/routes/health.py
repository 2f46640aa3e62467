"""GET /health: each component (store, embedder, LLM, reranker), its backend, model and state."""

from __future__ import annotations

from fastapi import APIRouter

from carrag import __version__
from carrag.api.deps import ContainerDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.health import HealthOut
from carrag.services.models import ComponentHealth
from carrag.services.settings import Settings

router = APIRouter(tags=["health"], route_class=JsonBodyRoute)


@router.get("/health", response_model=HealthOut, summary="Component status (never needs an API key)")
async def health(container: ContainerDep) -> HealthOut:
    return health_report(await container.health(), container.settings)


def health_report(components: dict[str, ComponentHealth], settings: Settings) -> HealthOut:
    """Overall: unavailable without a store or embedder, degraded when anything else is neither ok nor
    off (left out by configuration); and the store in use (``settings``)."""
    states = {c.status for c in components.values()} - {"off"}
    if components["store"].status == "unavailable" or components["embedder"].status == "unavailable":
        overall = "unavailable"
    elif states - {"ok"}:
        overall = "degraded"
    else:
        overall = "ok"
    return HealthOut.model_validate(
        {
            "status": overall,
            "version": __version__,
            "components": components,
            "store": {"backend": settings.store, "location": settings.store_location},
            "defaults": {
                "answer_mode": settings.resolved_answer_mode,
                "top_k": settings.default_top_k,
                "rerank": settings.rerank_enabled is True
                or (settings.rerank_enabled == "auto" and components["reranker"].status == "ok"),
            },
        }
    )

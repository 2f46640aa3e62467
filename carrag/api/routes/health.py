"""GET /health: each component (store, embedder, LLM, reranker), its backend, model and state."""

from __future__ import annotations

from fastapi import APIRouter

from carrag import __version__
from carrag.api.deps import ContainerDep
from carrag.api.schemas.health import HealthOut

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthOut, summary="Component status (never needs an API key)")
async def health(container: ContainerDep) -> HealthOut:
    components = await container.health()
    states = {c.status for c in components.values()}
    if components["store"].status == "unavailable" or components["embedder"].status == "unavailable":
        overall = "unavailable"
    elif states != {"ok"}:
        overall = "degraded"
    else:
        overall = "ok"
    settings = container.settings
    return HealthOut.model_validate(
        {
            "status": overall,
            "version": __version__,
            "components": components,
            "store": {"backend": settings.store, "location": settings.store_location},
        }
    )

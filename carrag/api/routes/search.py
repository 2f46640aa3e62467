"""POST /search: retrieval stages 1–3 without generation (what evaluation and agents call)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from carrag.api.deps import PrincipalDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.query import SearchRequest, SearchResponse
from carrag.services.retrieval.search import SearchOutcome

router = APIRouter(tags=["query"], route_class=JsonBodyRoute)


@router.post("/search", response_model=SearchResponse, summary="Hybrid search with reranking and expansion")
async def search(body: SearchRequest, request: Request, principal: PrincipalDep) -> SearchOutcome:
    container = request.app.state.container  # read as `get_container` does: the hot route solves no more
    return await container.search.search(body.to_query(container.requests, principal))

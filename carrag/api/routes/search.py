"""POST /search: retrieval stages 1–3 without generation (what evaluation and agents call)."""

from __future__ import annotations

from fastapi import APIRouter

from carrag.api.deps import PrincipalDep, RequestsDep, SearchDep
from carrag.api.schemas.query import SearchRequest, SearchResponse
from carrag.services.retrieval.search import SearchOutcome

router = APIRouter(tags=["query"])


@router.post("/search", response_model=SearchResponse, summary="Hybrid search with reranking and expansion")
async def search(
    body: SearchRequest, search: SearchDep, requests: RequestsDep, principal: PrincipalDep
) -> SearchOutcome:
    return await search.search(body.to_query(requests, principal))

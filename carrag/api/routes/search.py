"""POST /search: retrieval stages 1–3 without generation (what evaluation and agents call)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from carrag.api.deps import request_principal
from carrag.api.schemas.query import SearchRequest, SearchResponse
from carrag.services.access import Principal
from carrag.services.retrieval.search import SearchOutcome

router = APIRouter(tags=["query"])


@router.post("/search", response_model=SearchResponse, summary="Hybrid search with reranking and expansion")
async def search(
    body: SearchRequest, request: Request, principal: Annotated[Principal, Depends(request_principal)]
) -> SearchOutcome:
    # One dependency, without sub-dependencies: FastAPI solves every declared dependency and each of
    # its own on every request, cached or not, and this is the hot route. The key check is
    # `request_principal` (main.py includes this router first without the routers' `require_api_key`
    # and its HTTPBearer, six solves per request before); the container is read as `get_container` does.
    container = request.app.state.container
    return await container.search.search(body.to_query(container.requests, principal))

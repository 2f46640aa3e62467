"""POST /admin/reset (empty the store), POST /admin/reindex (re-embed with the configured model, in the
background) and GET /admin/reindex (its progress); full-access keys only.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from carrag.api.deps import ContainerDep, DocumentsDep, PrincipalDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.admin import ReindexStatusOut
from carrag.api.schemas.documents import ResetRequest, ResetResponse
from carrag.services.documents import StoreReset
from carrag.services.errors import InvalidInput
from carrag.services.reindexing import ReindexStatus

router = APIRouter(prefix="/admin", tags=["admin"], route_class=JsonBodyRoute)


@router.post("/reset", response_model=ResetResponse, summary="Delete every document and chunk (after a model change)")
async def reset(documents: DocumentsDep, principal: PrincipalDep, body: ResetRequest) -> StoreReset:
    if not body.confirm:
        raise InvalidInput('Resetting deletes every document; send {"confirm": true} to go ahead.')
    return await documents.reset(principal)


@router.post(
    "/reindex",
    response_model=ReindexStatusOut,
    status_code=202,
    summary="Re-embed every document with the configured model (in the background)",
    responses={200: {"description": "A reindex is already running: its progress."}},
)
async def start_reindex(container: ContainerDep, principal: PrincipalDep, response: Response) -> ReindexStatus:
    principal.check_full_access("Re-embedding the store")
    reindexer = container.reindexer
    if reindexer.running:
        response.status_code = 200
        return reindexer.status
    return reindexer.start()


@router.get("/reindex", response_model=ReindexStatusOut, summary="Progress of the current or last reindex")
async def reindex_status(container: ContainerDep, principal: PrincipalDep) -> ReindexStatus:
    principal.check_full_access("Reading the reindex progress")
    return container.reindexer.status

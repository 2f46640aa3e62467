"""POST /admin/reset: empty the store (every document, chunk and the recorded embedding model).

The way out after a change of embedding model (the store refuses the new model's vectors with 409
until then); the CLI's ``carrag reset`` does the same. Behind API_KEYS like every other route;
only a key with full access (not limited by API_KEY_SCOPES) may use it.
"""

from __future__ import annotations

from fastapi import APIRouter

from carrag.api.deps import DocumentsDep, PrincipalDep
from carrag.api.schemas.documents import ResetRequest, ResetResponse
from carrag.services.documents import StoreReset
from carrag.services.errors import InvalidInput

router = APIRouter(prefix="/admin", tags=["admin"])


@router.post("/reset", response_model=ResetResponse, summary="Delete every document and chunk (after a model change)")
async def reset(documents: DocumentsDep, principal: PrincipalDep, body: ResetRequest) -> StoreReset:
    if not body.confirm:
        raise InvalidInput('Resetting deletes every document; send {"confirm": true} to go ahead.')
    return await documents.reset(principal)

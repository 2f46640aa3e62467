"""POST /sync: keep a folder on the server's machine in sync with a collection (`carrag/services/sync/`).

The answer is 202 with a job at once; ``GET /jobs/{id}`` follows it (progress: files done of found) and
carries its ``report`` as it fills. A site is crawled through POST /ingest/url with ``crawl``.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from carrag.api.deps import ContainerDep, PrincipalDep, RequestsDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.routes.ingest import accepted
from carrag.api.schemas.jobs import JobAccepted
from carrag.api.schemas.sync import SyncRequest

router = APIRouter(prefix="/sync", tags=["ingest"], route_class=JsonBodyRoute)


@router.post(
    "",
    status_code=202,
    response_model=JobAccepted,
    summary="Sync a folder on the server into a collection",
    description="Ingests the folder's new files, re-ingests changed ones (unchanged files are not read again), "
    "deletes the documents this sync made of files that are gone, as a job. The folder must lie under a "
    "directory named in SYNC_ROOTS (403 otherwise, symlinks resolved first).",
    responses={
        403: {"description": "Outside SYNC_ROOTS (or SYNC_ROOTS unset), or the key may not write the collection."},
        409: {"description": "A sync of this folder into this collection is running (on any replica)."},
    },
)
async def sync_folder(
    container: ContainerDep, requests: RequestsDep, principal: PrincipalDep, body: SyncRequest
) -> JSONResponse:
    command = requests.ingest(**body.model_dump(exclude={"path", "globs"}), principal=principal)
    job = await container.sync.sync_folder(body.path, command, body.globs, allowed_roots=container.settings.sync_roots)
    return accepted(job)

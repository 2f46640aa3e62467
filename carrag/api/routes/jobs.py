"""GET /jobs, GET /jobs/{id}, DELETE /jobs/{id}: asynchronous ingests (see `carrag/services/jobs/`).

Jobs are created by ``POST /ingest/file?async=true`` and ``POST /ingest/url?async=true``. Their records
live in the store, so every replica answers for every job, and a cancel works from any replica.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from carrag.api.deps import JobsDep, PrincipalDep
from carrag.api.json_body import JsonBodyRoute
from carrag.api.schemas.jobs import JobListOut, JobOut
from carrag.services.jobs import Job

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=JsonBodyRoute)


def status_url(job: Job) -> str:
    return f"/jobs/{job.job_id}"


@router.get("", response_model=JobListOut, summary="Recent ingest jobs (newest first)")
async def list_jobs(
    jobs: JobsDep, principal: PrincipalDep, limit: Annotated[int, Query(ge=1, le=1000)] = 50
) -> JobListOut:
    return JobListOut.model_validate(
        {"items": await jobs.recent(limit, principal), "total": await jobs.total(principal)}
    )


@router.get("/{job_id}", response_model=JobOut, summary="An ingest job's state, progress, timings and result")
async def get_job(jobs: JobsDep, principal: PrincipalDep, job_id: str) -> Job:
    return await jobs.get(job_id, principal)


@router.delete(
    "/{job_id}",
    response_model=JobOut,
    summary="Cancel an ingest job; nothing of it is stored",
    description="On the replica running the job it stops at once. On another replica the request is recorded "
    "in the job (`cancel_requested`) and the running replica stops the job at its next lease renewal "
    "(JOB_LEASE_RENEW_SECONDS); the answer waits for that, up to a lease.",
    responses={409: {"description": "The job has already finished, or is writing its document."}},
)
async def cancel_job(jobs: JobsDep, principal: PrincipalDep, job_id: str) -> Job:
    return await jobs.cancel(job_id, principal)

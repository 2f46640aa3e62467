"""Asynchronous ingest jobs: `JobManager` (``manager``), the job and its record (``model``), the lease
protocol (``leases``) and the `JobRepository` port (``repository``).
"""

from carrag.services.jobs.manager import JobManager
from carrag.services.jobs.model import INTERNAL_ERROR, Job, Progress
from carrag.services.jobs.repository import InMemoryJobRepository, JobRecord, JobRepository, StoredJob

__all__ = [
    "INTERNAL_ERROR",
    "InMemoryJobRepository",
    "Job",
    "JobManager",
    "JobRecord",
    "JobRepository",
    "Progress",
    "StoredJob",
]

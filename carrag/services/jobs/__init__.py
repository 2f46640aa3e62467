"""Asynchronous ingest jobs (``POST /ingest/...?async=true``), their durable records and leases.

- ``manager``: `JobManager`, the service (submit, run, read, cancel, sweep, shutdown);
- ``model``: `Job` (the pipeline's `IngestObserver`, the freshest view of a running job) and its record;
- ``leases``: the lease protocol (renewal, settling a dead owner's job, cancels from another replica);
- ``repository``: the `JobRepository` port and `InMemoryJobRepository`.

The store adapters of the port live with their stores: `stores/sqlite_jobs.py` (a ``jobs`` table in the
SQLite file) and `stores/elasticsearch/jobs.py` (an index ``<ELASTICSEARCH_INDEX>_jobs``).
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

"""Syncs and crawls start here, as jobs (`JobManager.submit_exclusive`). What can be refused is refused
before a job exists. A job's id derives from the collection and what it syncs, so a second sync of the
same folder or site into the same collection is a 409 while the first runs, on any replica.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from carrag.services.collections import CollectionService
from carrag.services.errors import InvalidInput
from carrag.services.fetchers.base import Fetcher
from carrag.services.ingestion import IngestionService
from carrag.services.jobs import Job, JobManager
from carrag.services.models import Collection
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.stores.base import Store
from carrag.services.sync.crawl import Crawl, CrawlLimits
from carrag.services.sync.folder import FolderSync
from carrag.services.sync.folder_scan import folder_root
from carrag.services.sync.report import SyncReport
from carrag.services.sync.web_links import CrawlScope
from carrag.services.vocabulary import JobKind, JobState


def sync_job_id(kind: JobKind, collection_id: str, root: str) -> str:
    digest = hashlib.sha256(f"{collection_id}\n{root}".encode()).hexdigest()
    return f"{kind}-{digest[:32]}"


@dataclass
class SyncService:
    settings: Settings
    store: Store
    ingestion: IngestionService
    fetcher: Fetcher
    jobs: JobManager
    collections: CollectionService

    async def sync_folder(
        self,
        folder: str,
        command: IngestCommand,
        patterns: Sequence[str] = (),
        *,
        allowed_roots: Sequence[Path] | None = None,
    ) -> Job:
        """Start syncing ``folder`` (only files matching ``patterns``, if any) into the command's collection.
        ``allowed_roots`` None: any folder (the CLI's local mode); the API passes SYNC_ROOTS."""
        root = await asyncio.to_thread(folder_root, folder, allowed_roots)
        collection = (await self.collections.resolve([command.collection]))[0]
        report = SyncReport(root.as_posix())

        sync = functools.partial(FolderSync, root=root, patterns=list(patterns))
        return await self._start(JobKind.SYNC, report.root, command, collection, report, sync)

    async def crawl(self, url: str, command: IngestCommand, limits: CrawlLimits) -> Job:
        """Start crawling the site at ``url`` into the command's collection."""
        if limits.max_pages > self.settings.crawl_max_pages:
            raise InvalidInput(
                f"max_pages is {limits.max_pages:,}; the limit is {self.settings.crawl_max_pages:,} (CRAWL_MAX_PAGES)."
            )
        scope = CrawlScope.of(url, limits.same_prefix)
        collection = (await self.collections.resolve([command.collection]))[0]
        report = SyncReport(scope.prefix)

        crawl = functools.partial(Crawl, fetcher=self.fetcher, scope=scope, limits=limits)
        return await self._start(JobKind.CRAWL, scope.start, command, collection, report, crawl)

    async def _start(
        self,
        kind: JobKind,
        source: str,
        command: IngestCommand,
        collection: Collection,
        report: SyncReport,
        sync: Callable[..., FolderSync | Crawl],
    ) -> Job:
        async def work(job: Job) -> None:
            job.report = report
            job.stage(JobState.RUNNING)
            # job.embedded is the job's progress counter: sources done, sources found
            args = (self.settings, self.store, self.ingestion, command, collection.collection_id, report, job.embedded)
            await sync(*args).run()

        job_id = sync_job_id(kind, collection.collection_id, report.root)
        return await self.jobs.submit_exclusive(job_id, kind, source, collection.name, work)

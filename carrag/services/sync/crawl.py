"""Crawling a site into a collection, and keeping it current by crawling again.

Links are followed within the scope (`CrawlScope`), ``max_depth`` and ``max_pages``, with the sitemap's
pages as start pages too; robots.txt and the fetcher's limits apply. A recrawl sends the validators
back, so a 304 costs no parse or embedding, and a 404/410 deletes the page's document. Pages no longer
reached are deleted only after a complete crawl: pages not seen may still be there.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

from carrag.services.errors import CarragError, FetchFailed, FetchRefused, PayloadTooLarge
from carrag.services.fetchers.base import FetchedPage, Fetcher, FetchOptions
from carrag.services.fetchers.http import HostPacer
from carrag.services.models import DocumentRecord, MetadataValue
from carrag.services.requests import IngestCommand
from carrag.services.sync import ownership
from carrag.services.sync.ingesting import SourceSync, admitted, outcome_of
from carrag.services.sync.ownership import holdings, sync_metadata
from carrag.services.sync.web_links import CrawlScope, normalise, origin, page_links, sitemap_entries
from carrag.services.vocabulary import SyncOutcome

logger = logging.getLogger(__name__)

ROBOTS_TYPES = frozenset({"text/plain", "text/html", "application/octet-stream", ""})  # served as anything
SITEMAP_TYPES = frozenset({"application/xml", "text/xml"})
HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_SITEMAPS = 20  # sitemap files read per crawl (an index and the sitemaps it lists)
MAX_CRAWL_DELAY = 60.0  # seconds: a longer Crawl-delay is shortened to this
Outcome = tuple[SyncOutcome, str | None, str | None]  # (outcome, document id, detail)


@dataclass(frozen=True, slots=True)
class CrawlLimits:
    max_pages: int
    max_depth: int
    same_prefix: bool = True


@dataclass
class Crawl(SourceSync):
    fetcher: Fetcher
    scope: CrawlScope
    limits: CrawlLimits
    robots: RobotFileParser = field(init=False, default_factory=RobotFileParser)
    # robots.txt's Crawl-delay, on top of the fetcher's PER_HOST_DELAY
    pacer: HostPacer = field(init=False, default_factory=lambda: HostPacer(0.0))
    queue: asyncio.Queue[tuple[str, int]] = field(init=False, default_factory=asyncio.Queue)
    seen: set[str] = field(init=False, default_factory=set)  # pages queued or visited
    reached: set[str] = field(init=False, default_factory=set)  # pages whose content was read (200) or confirmed (304)
    deleted: set[str] = field(init=False, default_factory=set)
    truncated: bool = field(init=False, default=False)  # more pages than max_pages
    incomplete: str | None = field(init=False, default=None)  # why pages not reached cannot be taken for gone

    async def run(self) -> None:
        await self._read_robots()
        self.held = await holdings(self.store, self.collection_id, self.report.root)
        self._enqueue(self.scope.start, 0)
        for url in await self._sitemap_pages():
            self._enqueue(url, 0)
        workers = [asyncio.create_task(self._worker()) for _ in range(self.settings.crawl_concurrency)]
        try:
            await self.queue.join()
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        await self._delete_unreached()

    # --- robots.txt and the sitemap ----------------------------------------------------------------------
    async def _read_robots(self) -> None:
        """No robots.txt (404 and the like) allows everything (RFC 9309). A robots.txt that exists but cannot
        be read (401/403, a server error, no answer, a refused fetch) stops the crawl rather than guess what
        it says, and delete pages on the strength of the guess."""
        url = origin(self.scope.start) + "/robots.txt"
        try:
            page = await self._fetch(url, FetchOptions(follow=self._on_site, media_types=ROBOTS_TYPES))
        except FetchFailed as exc:
            if exc.status is None or exc.status in (401, 403) or exc.status >= 500:
                raise FetchFailed(f"{url} could not be read, so the crawl stopped: {exc.message}") from exc
            self.robots.parse([])
            return
        self.robots.parse(page.text().splitlines())
        delay = self.robots.crawl_delay(self.settings.fetch_user_agent)
        self.pacer.delay = min(float(delay or 0), MAX_CRAWL_DELAY)

    async def _sitemap_pages(self) -> list[str]:
        """The pages in scope the site's sitemaps list (a sitemap index followed to its sitemaps)."""
        site = origin(self.scope.start)
        waiting = [url for url in (normalise(u) for u in self.robots.site_maps() or [site + "/sitemap.xml"]) if url]
        pages: list[str] = []
        for _ in range(MAX_SITEMAPS):
            if not waiting or len(pages) >= self.limits.max_pages:
                break
            url = waiting.pop(0)
            if not self._on_site(url) or not self.robots.can_fetch(self.settings.fetch_user_agent, url):
                continue
            try:
                sitemap = await self._fetch(url, FetchOptions(follow=self._on_site, media_types=SITEMAP_TYPES))
            except FetchFailed as exc:
                if not exc.gone:
                    self.incomplete = f"the sitemap {url} could not be read ({exc.message})"
                continue
            except (FetchRefused, PayloadTooLarge):
                continue
            listed, nested = await asyncio.to_thread(sitemap_entries, sitemap.body)
            pages += [page for page in map(normalise, listed) if page is not None and page in self.scope]
            waiting += [nested_url for nested_url in map(normalise, nested) if nested_url is not None]
        return pages

    # --- the pages ---------------------------------------------------------------------------------------
    def _enqueue(self, url: str, depth: int) -> None:
        if url in self.seen or url not in self.scope:
            return
        if len(self.seen) >= self.limits.max_pages:
            self.truncated = True
            return
        self.seen.add(url)
        self.queue.put_nowait((url, depth))
        self.progress(self.done, len(self.seen))

    async def _worker(self) -> None:
        while True:
            url, depth = await self.queue.get()
            try:
                outcome, document_id, detail = await self._visit(url, depth)
            except CarragError as exc:
                outcome, document_id, detail = SyncOutcome.FAILED, None, exc.message
            except Exception:
                logger.exception("a page failed to crawl", extra={"url": url})
                outcome, document_id, detail = SyncOutcome.FAILED, None, "internal error; the service logged it"
            if outcome == SyncOutcome.FAILED and url not in self.reached:  # not seen: its links are unknown
                self.incomplete = self.incomplete or f"{url} could not be fetched ({detail})"
            self._finished(url, outcome, document_id, detail)
            self.queue.task_done()

    def _finished(self, url: str, outcome: SyncOutcome, document_id: str | None, detail: str | None) -> None:
        self.report.add(url, outcome, document_id, detail)
        self.done += 1
        self.progress(self.done, max(self.done, len(self.seen)))

    async def _visit(self, url: str, depth: int) -> Outcome:
        if not self.robots.can_fetch(self.settings.fetch_user_agent, url):
            return SyncOutcome.SKIPPED, None, "disallowed by robots.txt"
        existing = self.held.owned.get(url)
        recorded = existing.user_metadata if existing is not None and self.settings.keep_originals else {}
        validators = FetchOptions(
            etag=_text(recorded.get(ownership.ETAG)), last_modified=_text(recorded.get(ownership.LAST_MODIFIED))
        )
        try:
            page = await self._fetch(url, validators)
        except FetchFailed as exc:
            if not exc.gone:
                raise
            if existing is None:
                return SyncOutcome.SKIPPED, None, f"{exc.message} (a broken link)"
            await self._delete(existing)
            return SyncOutcome.DELETED, existing.document_id, exc.message
        except (FetchRefused, PayloadTooLarge) as exc:
            return SyncOutcome.SKIPPED, None, exc.message
        self.reached.add(url)
        if page.not_modified and existing is not None:
            if depth < self.limits.max_depth:
                await self._follow(await self._kept_page(existing, page), depth)
            return SyncOutcome.UNCHANGED, existing.document_id, None
        if depth < self.limits.max_depth:
            await self._follow(page, depth)
        if url in self.held.others:
            return SyncOutcome.SKIPPED, None, "a document this crawl did not create holds this URL"
        command = self._command(url, existing, page)
        result = await admitted(lambda: self.ingestion.ingest_page(page, command))
        outcome, detail = outcome_of(result, existing)
        if outcome == SyncOutcome.SKIPPED and existing is not None:  # now a copy of another page: its old text goes
            await self._delete(existing)
            return SyncOutcome.DELETED, existing.document_id, f"now {detail}"
        return outcome, result.document_id, detail

    def _command(self, url: str, existing: DocumentRecord | None, page: FetchedPage) -> IngestCommand:
        bookkeeping: dict[str, MetadataValue | None] = {
            ownership.ROOT: self.report.root,
            ownership.ETAG: page.etag,
            ownership.LAST_MODIFIED: page.last_modified,
        }
        metadata = sync_metadata(existing, self.command.metadata, bookkeeping)
        return dataclasses.replace(self.command, source_id=url, metadata=metadata)

    async def _follow(self, page: FetchedPage, depth: int) -> None:
        if page.content_type.split(";")[0].strip() in HTML_TYPES:
            for link in await asyncio.to_thread(page_links, page.body, page.final_url):
                self._enqueue(link, depth + 1)

    async def _kept_page(self, document: DocumentRecord, answer: FetchedPage) -> FetchedPage:
        """An unchanged page's content, for its links: its kept original, else fetched again."""
        original = await self.store.get_original(document.document_id)
        if original is None:
            return await self._fetch(answer.url, FetchOptions())
        body = await original.read()
        return FetchedPage(answer.url, answer.final_url, original.content_type, None, body)

    async def _fetch(self, url: str, options: FetchOptions) -> FetchedPage:
        """Pages are redirected only within the scope (robots.txt and sitemaps: within the site)."""
        await self.pacer.wait(origin(url))
        return await self.fetcher.fetch(url, dataclasses.replace(options, follow=options.follow or self.scope.follows))

    def _on_site(self, url: str) -> bool:
        """On the start URL's host (http to https is fine)."""
        return urlsplit(normalise(url) or "").hostname == urlsplit(self.scope.start).hostname

    async def _delete(self, document: DocumentRecord) -> None:
        await self.store.delete_document(document.document_id)
        self.deleted.add(document.source_id)

    async def _delete_unreached(self) -> None:
        unreached = [
            document for url, document in self.held.owned.items() if url not in self.reached and url not in self.deleted
        ]
        if not unreached:
            return
        if self.truncated or self.incomplete:
            why = f"it stopped at max_pages ({self.limits.max_pages})" if self.truncated else self.incomplete
            self.report.note = f"{len(unreached)} pages this crawl made earlier were not reached and were kept: {why}."
            return
        for document in unreached:
            try:
                await self._delete(document)
            except CarragError as exc:
                self._finished(document.source_id, SyncOutcome.FAILED, document.document_id, exc.message)
            else:
                detail = "no longer reached: not linked, not in the sitemap, or disallowed by robots.txt"
                self._finished(document.source_id, SyncOutcome.DELETED, document.document_id, detail)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None

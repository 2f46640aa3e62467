"""`carrag sync`: keep a folder or a site in sync with a collection, once or (a folder, ``--watch``) as it
changes. Each run is a sync job (local, or on the server with ``--url``); a line per source it changed,
skipped or failed, then the counts (or, with ``--json``, the finished job: one JSON object per run)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from carrag.api.schemas.jobs import JobOut
from carrag.cli.client import ClientError, IngestSettings, SyncTarget
from carrag.cli.clients import CarragClient
from carrag.cli.filters import Meta, metadata_option
from carrag.cli.ingest_sources import is_url
from carrag.cli.options import ApiKey, AsJson, CollectionOption, Url
from carrag.cli.output import print_json, progress_bars
from carrag.cli.running import console, run_with_client
from carrag.services.requests import split_tags
from carrag.services.sync.crawl import CrawlLimits
from carrag.services.sync.watch import folder_changes
from carrag.services.vocabulary import ChunkingStrategy, SyncOutcome

MARKS = {
    SyncOutcome.ADDED: "[green]+ added[/green]    ",
    SyncOutcome.UPDATED: "[green]✓ updated[/green]  ",
    SyncOutcome.DELETED: "[magenta]- deleted[/magenta]  ",
    SyncOutcome.SKIPPED: "[dim]= skipped[/dim]  ",
    SyncOutcome.FAILED: "[red]✗ failed[/red]   ",
}


def sync(
    source: Annotated[str, typer.Argument(help="A folder, or an http(s) URL: the site from there.")],
    globs: Annotated[
        list[str] | None,
        typer.Option("--glob", help="Only files matching this (repeat for several): `*.md`, `guides/**/*.pdf`."),
    ] = None,
    tags: Annotated[str | None, typer.Option("--tags", help="Comma-separated tags for every document.")] = None,
    meta: Meta = None,
    chunking: Annotated[ChunkingStrategy | None, typer.Option("--chunking", help="Chunking strategy.")] = None,
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep following the folder: sync again after each burst of changes.")
    ] = False,
    debounce: Annotated[
        float, typer.Option("--debounce", min=0.1, help="With --watch: seconds without a change before syncing.")
    ] = 2.0,
    max_pages: Annotated[int, typer.Option("--max-pages", min=1, help="A site: pages fetched at most.")] = 100,
    max_depth: Annotated[int, typer.Option("--max-depth", min=0, help="A site: links followed from a start page.")] = 3,
    whole_site: Annotated[
        bool, typer.Option("--whole-site", help="A site: crawl its whole host, not only under the URL's directory.")
    ] = False,
    collection: CollectionOption = None,
    as_json: AsJson = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Keep a folder or a site in sync with a collection: ingest what is new, re-ingest what changed, delete
    the documents this sync made of what is gone (never others). Unchanged files and pages cost no parse or
    embedding. Exit 1 if any source failed. With --url the server syncs the folder (the path as it sees it;
    it must lie under its SYNC_ROOTS)."""
    if is_url(source):
        if watch or globs:
            raise typer.BadParameter("--watch and --glob are for folders; run the crawl again to update a site.")
        target = SyncTarget(source, crawl=CrawlLimits(max_pages, max_depth, same_prefix=not whole_site))
    else:
        target = SyncTarget(os.path.abspath(Path(source).expanduser()), tuple(globs or ()))
    options = IngestSettings(
        tags=split_tags(tags), chunking=chunking, metadata=metadata_option(meta), collection=collection
    )
    reporter = Console(highlight=False, stderr=True) if as_json else console
    try:
        failed = run_with_client(
            url, api_key, lambda client: follow(client, target, options, watch, debounce, reporter, as_json)
        )
    except KeyboardInterrupt:
        if not watch:
            raise
        reporter.print("Stopped watching.")
        return
    if failed:
        raise typer.Exit(1)


async def follow(
    client: CarragClient,
    target: SyncTarget,
    options: IngestSettings,
    watch: bool,
    debounce: float,
    reporter: Console,
    as_json: bool,
) -> bool:
    """One run, and whether it failed; with ``watch``, then one after each settled burst of changes, until
    Ctrl-C. The folder is watched from before the first run: a change made while a run works gives another."""
    if not watch:
        return await run_once(client, target, options, reporter, as_json)
    changed = asyncio.Event()

    async def note_changes() -> None:
        async for _ in folder_changes(Path(target.source), debounce):
            changed.set()

    watcher = asyncio.create_task(note_changes())
    try:
        await run_once(client, target, options, reporter, as_json)
        reporter.print(f"[dim]Watching {escape(target.source)} (Ctrl-C stops).[/dim]")
        while True:
            await changed.wait()
            changed.clear()
            try:
                await run_once(client, target, options, reporter, as_json)
            except ClientError as error:
                if error.fatal or error.status != 409:
                    raise
                reporter.print(f"[yellow]![/yellow] {escape(error.detail)} Trying again at the next change.")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def run_once(
    client: CarragClient, target: SyncTarget, options: IngestSettings, reporter: Console, as_json: bool
) -> bool:
    with progress_bars(reporter) as progress:
        task = progress.add_task(f"syncing {target.source}", total=None)

        def show(job: JobOut) -> None:
            progress.update(task, completed=job.progress.done, total=job.progress.total or None)

        job = await client.sync(target, options, show)
    if as_json:
        print_json(job)
    print_report(job, reporter)
    return job.state != "done" or job.report is None or job.report.counts.get(SyncOutcome.FAILED, 0) > 0


def print_report(job: JobOut, reporter: Console) -> None:
    report = job.report
    if job.state != "done" or report is None:
        reporter.print(f"[red]✗ {escape(job.kind)} {job.state}[/red]: {escape(job.error or 'no report')}")
        return
    for item in report.sources:
        detail = f": {escape(item.detail)}" if item.detail else ""
        reporter.print(f"{MARKS[item.outcome]}{escape(item.source)}{detail}")
    if report.unlisted:
        reporter.print(f"[dim]… and {report.unlisted} more (counted below)[/dim]")
    if report.note:
        reporter.print(f"[yellow]![/yellow] {escape(report.note)}")
    counts = ", ".join(f"{report.counts.get(outcome, 0)} {outcome}" for outcome in SyncOutcome)
    failed = report.counts.get(SyncOutcome.FAILED, 0)
    reporter.print(("[red]" if failed else "[green]") + escape(f"{report.root}: {counts}") + "[/]")

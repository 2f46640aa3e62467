"""`carrag ingest`: files, globs, directories and URLs, one source at a time, with a progress bar and a
line per source (or one JSON report)."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import TaskID

from carrag.api.schemas.documents import DocumentOut
from carrag.api.schemas.ingest import IngestResponse
from carrag.cli.client import ClientError, DocumentListing, IngestSettings, ProgressCallback
from carrag.cli.clients import CarragClient
from carrag.cli.filters import Meta, metadata_option
from carrag.cli.ingest_sources import ResolvedSources, documents_to_prune, resolve_sources
from carrag.cli.options import ApiKey, AsJson, CollectionOption, Url
from carrag.cli.output import one_line, plural, print_json, progress_bars
from carrag.cli.running import console, run_with_client
from carrag.services.requests import split_tags
from carrag.services.vocabulary import ChunkingStrategy


def ingest(
    sources: Annotated[list[str], typer.Argument(help='Files, globs (quote them: "docs/**/*.md"), directories, URLs.')],
    tags: Annotated[str | None, typer.Option("--tags", help="Comma-separated tags for every source.")] = None,
    meta: Meta = None,
    chunking: Annotated[ChunkingStrategy | None, typer.Option("--chunking", help="Chunking strategy.")] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Re-ingest sources even when their content is unchanged."),
    ] = False,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune", help="Delete stored file documents these sources no longer match (URL documents are kept)."
        ),
    ] = False,
    collection: CollectionOption = None,
    as_json: AsJson = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Ingest files, globs and URLs; report each source; exit 1 if any failed. With --json, stdout is one
    JSON object (every source's outcome and the counts) and the per-source lines go to stderr."""
    from carrag.services.parsers import SUPPORTED_EXTENSIONS

    resolved = resolve_sources(sources, Path.cwd(), SUPPORTED_EXTENSIONS)
    options = IngestSettings(
        tags=split_tags(tags), chunking=chunking, force=force, metadata=metadata_option(meta), collection=collection
    )
    report = IngestReport()
    reporter = Console(highlight=False, stderr=True) if as_json else console
    failed = run_with_client(
        url, api_key, lambda client: ingest_all(client, resolved, options, prune, report, reporter)
    )
    if as_json:
        print_json({"sources": report.sources, "counts": report.counts})
    if failed:
        raise typer.Exit(1)


@dataclass
class IngestReport:
    """What `carrag ingest --json` prints: one entry per source (the API's ingest answer, or the error)."""

    sources: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


async def ingest_all(
    client: CarragClient,
    resolved: ResolvedSources,
    options: IngestSettings,
    prune: bool,
    outcomes: IngestReport,
    console: Console,
) -> int:
    """Ingest every resolved source, one at a time, into ``outcomes``; returns how many failed."""
    refused = [(missing, "no such file or directory") for missing in resolved.missing] + resolved.conflicts
    counts = {"ingested": 0, "unchanged": 0, "updated": 0, "duplicate": 0, "failed": len(refused), "pruned": 0}
    outcomes.counts = counts
    outcomes.sources += [{"source": path, "status": "failed", "error": why} for path, why in refused]
    for path, why in refused:
        console.print(f"[red]✗ failed[/red]    {escape(path)}: {escape(why)}")
    for pattern in resolved.unmatched_patterns:
        console.print(f"[yellow]! no files[/yellow]  {escape(pattern)} matched no file of a supported type")
    jobs: list[tuple[str, Callable[[ProgressCallback], Awaitable[IngestResponse]]]] = [
        (file.source_id, functools.partial(client.ingest_file, file.path, file.source_id, options))
        for file in resolved.files
    ]
    jobs += [(link, functools.partial(client.ingest_url, link, options)) for link in resolved.urls]

    with progress_bars(console) as progress:
        overall = progress.add_task("sources", total=len(jobs))
        for name, start in jobs:
            current = progress.add_task(f"{one_line(name, 40)}: queued", total=None)

            def report(state: str, done: int, total: int, current: TaskID = current, name: str = name) -> None:
                progress.update(
                    current, description=f"{one_line(name, 40)}: {state}", completed=done, total=total or None
                )

            began = time.perf_counter()
            try:
                result = await start(report)
            except ClientError as error:
                if error.fatal:
                    raise  # unreachable server or refused key: every other source would fail the same way
                counts["failed"] += 1
                outcomes.sources.append({"source": name, "status": "failed", "error": error.detail})
                progress.console.print(f"[red]✗ failed[/red]    {escape(name)}: {escape(error.detail)}")
            else:
                counts[result.status] += 1
                outcomes.sources.append({"source": name, **result.model_dump(mode="json")})
                seconds = time.perf_counter() - began
                if result.status == "unchanged":
                    progress.console.print(f"[dim]= unchanged[/dim] {escape(name)}")
                elif result.status == "updated":
                    progress.console.print(
                        f"[green]✓ updated[/green]   {escape(name)}: same content, tags {escape(', '.join(result.tags))}"
                    )
                elif result.status == "duplicate":
                    progress.console.print(
                        f"[dim]= duplicate[/dim] {escape(name)}: same text as {escape(result.source_id)}, not stored"
                    )
                else:
                    replaced = " (replaced the previous version)" if result.replaced_document_id else ""
                    progress.console.print(
                        f"[green]✓ ingested[/green]  {escape(name)}: {plural(result.chunk_count, 'chunk')}, "
                        f"tags {escape(', '.join(result.tags) or '-')}, {seconds:.1f}s{replaced}"
                    )
            progress.remove_task(current)
            progress.advance(overall)

    if prune:
        stored = await all_documents(client, collection=options.collection or "default")
        for document in documents_to_prune(stored, resolved.file_source_ids):
            await client.delete_document(document.document_id)
            counts["pruned"] += 1
            outcomes.sources.append(
                {"source": document.source_id, "status": "pruned", "document_id": document.document_id}
            )
            console.print(f"[magenta]- pruned[/magenta]    {escape(document.source_id)}")

    summary = (
        f"{len(jobs) + len(refused)} sources: {counts['ingested']} ingested, "
        f"{counts['unchanged']} unchanged, {counts['failed']} failed"
    )
    if counts["updated"]:
        summary += f", {counts['updated']} updated"
    if counts["duplicate"]:
        summary += f", {counts['duplicate']} duplicate"
    if prune:
        summary += f", {counts['pruned']} pruned"
    if resolved.skipped:
        summary += f", {len(resolved.skipped)} skipped (unsupported type)"
    console.print(("[red]" if counts["failed"] else "[green]") + escape(summary) + "[/]")
    return counts["failed"]


async def all_documents(client: CarragClient, page_size: int = 500, collection: str | None = None) -> list[DocumentOut]:
    documents: list[DocumentOut] = []
    while True:
        page = await client.list_documents(
            DocumentListing(offset=len(documents), limit=page_size, collection=collection)
        )
        documents.extend(page.items)
        if not page.items or len(documents) >= page.total:
            return documents

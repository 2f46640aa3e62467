"""The ``carrag`` command line.

Every command but ``serve`` works either on the local store directly (the default: the same
composition root as the server, from the same settings) or against a running server (``--url``,
with ``--api-key`` when the server has API_KEYS). Both go through `carrag.cli.client.CarragClient`, so each
command is written once.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import math
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, BinaryIO, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from carrag import extras
from carrag.api.schemas.documents import ChunkPageOut, DocumentOut
from carrag.api.schemas.ingest import IngestResponse
from carrag.api.schemas.query import (
    QueryRequest,
    QueryResponse,
    SearchRequest,
    Source,
)
from carrag.cli.answer_stream import FinishedAnswer, follow_answer
from carrag.cli.client import (
    CarragClient,
    ClientError,
    DocumentListing,
    HttpClient,
    IngestSettings,
    LocalClient,
    ProgressCallback,
    all_documents,
)
from carrag.cli.collections import collections_app
from carrag.cli.filters import (
    CreatedAfter,
    CreatedBefore,
    FileName,
    Meta,
    MetaFilter,
    SourceType,
    TagPrefix,
    filter_fields,
    metadata_option,
)
from carrag.cli.ingest_sources import ResolvedSources, documents_to_prune, resolve_sources
from carrag.cli.output import Column, one_line, print_fields, print_json, print_note, print_rows, short_id
from carrag.cli.references import AMBIGUOUS_EXIT_CODE, AmbiguousReference, print_candidates, resolve_document
from carrag.extras import MissingExtra
from carrag.services.requests import split_tags
from carrag.services.settings import Settings, get_settings
from carrag.services.vocabulary import ChunkingStrategy, SearchMode

app = typer.Typer(help="Carrag: self-hosted retrieval-augmented generation.", no_args_is_help=True)
documents_app = typer.Typer(help="List, inspect and delete documents.", no_args_is_help=True)
app.add_typer(documents_app, name="documents")
app.add_typer(collections_app, name="collections")

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)
T = TypeVar("T")

Url = Annotated[
    str | None,
    typer.Option("--url", envvar="CARRAG_URL", help="A running Carrag server; without it, work on the local store."),
]
ApiKey = Annotated[
    str | None, typer.Option("--api-key", envvar="CARRAG_API_KEY", help="Bearer key for a server with API_KEYS.")
]
TopK = Annotated[
    int | None, typer.Option("--top-k", "-k", min=1, max=100, help="Passages to retrieve (default: DEFAULT_TOP_K).")
]
Tags = Annotated[str | None, typer.Option("--tags", help="Comma-separated tags: only documents with any of them.")]
SourceFilter = Annotated[str | None, typer.Option("--source", help="Only this source id, or a glob (`*.md`).")]
Rerank = Annotated[bool | None, typer.Option("--rerank/--no-rerank", help="Override RERANK_ENABLED.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the API's JSON (the same shape as over HTTP).")]
CollectionOption = Annotated[
    str | None, typer.Option("--collection", "-c", help="The collection (knowledge base); default: `default`.")
]
CollectionsOption = Annotated[
    list[str] | None,
    typer.Option("--collection", "-c", help="Search this collection (repeat for several); default: `default`."),
]


@app.command()
def serve(
    host: str = typer.Option(None, help="Bind address (default: HOST setting, 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default: PORT setting, 8000)."),
) -> None:
    """Run the HTTP service."""
    import uvicorn

    from carrag.api.lifecycle import exit_cleanly_after_sigterm

    settings = get_settings()
    exit_cleanly_after_sigterm()  # a graceful SIGTERM shutdown exits 0
    uvicorn.run(
        "carrag.api.main:app_factory",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        log_config=None,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
    )


# --- shared plumbing ------------------------------------------------------------------------------------
def open_client(url: str | None, api_key: str | None) -> CarragClient:
    if url:
        return HttpClient(url, api_key)
    # Fresh settings (not the cached ones): the environment may differ between invocations in one process.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    return LocalClient(Settings())


def run_with_client(url: str | None, api_key: str | None, work: Callable[[CarragClient], Awaitable[T]]) -> T:
    """Run one command's async work; a client failure becomes a message and exit status 1."""

    async def main() -> T:
        client = open_client(url, api_key)
        try:
            return await work(client)
        finally:
            await client.aclose()

    try:
        return asyncio.run(main())
    except AmbiguousReference as error:
        print_candidates(error)
        raise typer.Exit(AMBIGUOUS_EXIT_CODE) from None
    except ClientError as error:
        errors.print(f"[red]error:[/red] {escape(error.detail)}")
        raise typer.Exit(1) from None


def question_fields(
    question: str,
    top_k: int | None,
    tags: str | None,
    source: str | None,
    rerank: bool | None,
    collections: list[str] | None = None,
) -> dict[str, Any]:
    """The fields a query or search request sets (the rest keep the API's defaults)."""
    fields: dict[str, Any] = {"question": question}
    if top_k is not None:
        fields["top_k"] = top_k
    if collections:
        fields["collections"] = collections
    if split_tags(tags):
        fields["tags"] = split_tags(tags)
    if source:
        fields["source"] = source
    if rerank is not None:
        fields["rerank"] = rerank
    return fields


def pages_label(pages: list[int] | None, page: int | None = None) -> str:
    shown = pages or ([page] if page else [])
    if not shown:
        return ""
    if len(shown) == 1:
        return f"p. {shown[0]}"
    contiguous = all(later == earlier + 1 for earlier, later in itertools.pairwise(shown))
    return f"pp. {shown[0]}–{shown[-1]}" if contiguous else "pp. " + ", ".join(map(str, shown))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# --- ingest -------------------------------------------------------------------------------------------
@app.command()
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
    outcomes: IngestReport | None = None,
    console: Console = console,
) -> int:
    """Ingest every resolved source, one at a time; returns how many failed."""
    outcomes = outcomes if outcomes is not None else IngestReport()
    counts = {"ingested": 0, "unchanged": 0, "updated": 0, "duplicate": 0, "failed": len(resolved.missing), "pruned": 0}
    outcomes.counts = counts
    outcomes.sources += [
        {"source": missing, "status": "failed", "error": "no such file or directory"} for missing in resolved.missing
    ]
    for missing in resolved.missing:
        console.print(f"[red]✗ failed[/red]    {escape(missing)}: no such file or directory")
    for pattern in resolved.unmatched_patterns:
        console.print(f"[yellow]! no files[/yellow]  {escape(pattern)} matched no file of a supported type")
    jobs: list[tuple[str, Callable[[ProgressCallback], Awaitable[IngestResponse]]]] = [
        (file.source_id, functools.partial(client.ingest_file, file.path, file.source_id, options))
        for file in resolved.files
    ]
    jobs += [(link, functools.partial(client.ingest_url, link, options)) for link in resolved.urls]

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
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
        f"{len(jobs) + len(resolved.missing)} sources: {counts['ingested']} ingested, "
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


# --- query and search --------------------------------------------------------------------------------
@app.command()
def query(
    question: Annotated[str, typer.Argument(help="The question.")],
    top_k: TopK = None,
    tags: Tags = None,
    source: SourceFilter = None,
    rerank: Rerank = None,
    answer_mode: Annotated[
        str | None,
        typer.Option("--answer-mode", help="generate, extract or auto (default: ANSWER_MODE).", show_default=False),
    ] = None,
    as_json: AsJson = False,
    meta: MetaFilter = None,
    tag_prefix: TagPrefix = None,
    source_type: SourceType = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    filename: FileName = None,
    collection: CollectionsOption = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Ask a question: the answer streams in, then its sources are listed."""
    filters = filter_fields(meta, tag_prefix, source_type, created_after, created_before, filename)
    request = QueryRequest.model_validate(
        {**question_fields(question, top_k, tags, source, rerank, collection), **filters, "answer_mode": answer_mode}
    )
    if as_json:
        print_json(run_with_client(url, api_key, lambda client: collect_answer(client, request)))
        return

    async def work(client: CarragClient) -> None:
        printed = False

        def show(text: str) -> None:
            nonlocal printed
            printed = True
            typer.echo(text, nl=False)

        try:
            finished = await follow_answer(client.stream_query(request), on_token=show)
        except ClientError:
            if printed:
                typer.echo("")  # the error starts on a line of its own
            raise
        typer.echo("")
        print_answer_check(finished)
        print_sources(finished.sources)

    run_with_client(url, api_key, work)


async def collect_answer(client: CarragClient, request: QueryRequest) -> QueryResponse:
    """The streamed answer gathered into POST /query's JSON shape."""
    return (await follow_answer(client.stream_query(request))).response()


def print_answer_check(finished: FinishedAnswer) -> None:
    """The final answer when the check changed the streamed one, and why it was made the way it was."""
    done = finished.done
    if done.answer and done.answer.strip() != finished.streamed.strip():
        console.print("\n[bold]Checked answer[/bold]")
        typer.echo(done.answer)
    notes = [f"answer: {done.answer_mode}"]
    if done.fallback_reason:
        notes.append(done.fallback_reason)
    if done.finish_reason not in ("stop", "no_answer"):
        notes.append(f"finish: {done.finish_reason}")
    if done.grounding is not None and done.grounding.unsupported:
        notes.append(f"{len(done.grounding.unsupported)} unsupported sentence(s)")
    console.print(f"({'; '.join(notes)})", markup=False, style="dim")


def print_sources(sources: list[Source]) -> None:
    if not sources:
        return
    console.print("\n[bold]Sources[/bold]")
    for number, source in enumerate(sources, start=1):
        where = ", ".join(filter(None, [pages_label(source.pages, source.page), f"chunk {source.chunk_index}"]))
        console.print(f"  [{number}] {escape(source.source_id)} ({where}) score {source.score:.3f}", markup=False)


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: TopK = None,
    tags: Tags = None,
    source: SourceFilter = None,
    rerank: Rerank = None,
    mode: Annotated[SearchMode, typer.Option("--mode", help="Retrieval legs to use.")] = SearchMode.HYBRID,
    explain: Annotated[bool, typer.Option("--explain", help="Show BM25 and kNN ranks and the RRF score.")] = False,
    meta: MetaFilter = None,
    tag_prefix: TagPrefix = None,
    source_type: SourceType = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    filename: FileName = None,
    as_json: AsJson = False,
    collection: CollectionsOption = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Search without generating an answer; a table of the best passages."""
    filters = filter_fields(meta, tag_prefix, source_type, created_after, created_before, filename)
    request = SearchRequest.model_validate(
        {
            **question_fields(question, top_k, tags, source, rerank, collection),
            **filters,
            "mode": mode,
            "explain": explain,
        }
    )
    outcome = run_with_client(url, api_key, lambda client: client.search(request))
    if as_json:
        print_json(outcome)
        return
    if not outcome.results:
        print_note(outcome.message or "No results.")
        return
    columns = [
        Column("#", justify="right"),
        Column("score", justify="right"),
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("source", width=24),
        Column("page", width=10),
    ]
    if explain:
        columns += [Column(name, justify="right") for name in ("bm25", "knn", "rrf")]
    columns.append(Column("text", flexible=True))
    rows = []
    for number, hit in enumerate(outcome.results, start=1):
        row = [str(number), f"{hit.score:.3f}", hit.document_id, hit.source_id, pages_label(hit.pages, hit.page)]
        if explain:
            details = hit.explain
            rrf = details.rrf_score if details else None
            row += [
                _rank(details.bm25_rank if details else None),
                _rank(details.knn_rank if details else None),
                f"{rrf:.4f}" if rrf is not None else "-",
            ]
        row.append(one_line(hit.text))
        rows.append(row)
    print_rows(columns, rows, title=f"{len(outcome.results)} results" + (" (reranked)" if outcome.reranked else ""))
    if outcome.rerank_note:
        print_note(outcome.rerank_note)


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


# --- documents ----------------------------------------------------------------------------------------
class DocumentSortKey(StrEnum):
    """`documents list --sort`: GET /documents' ``sort`` values (`DocumentSort`)."""

    CREATED_AT = "created_at"
    FILENAME = "filename"
    CHUNK_COUNT = "chunk_count"


class ListOrder(StrEnum):
    """`documents list --order`: GET /documents' ``order`` values (`SortOrder`)."""

    ASC = "asc"
    DESC = "desc"


FILENAME_FILTER_MAX_CHARS = 500  # GET /documents?filename= takes as much


def filename_filter(value: str | None) -> str | None:
    """``--filename`` checked as GET /documents checks it: a non-empty substring or glob, not too long."""
    if value is None:
        return None
    if not value.strip():
        raise typer.BadParameter("give a file name, part of one, or a glob such as '*.pdf'", param_hint="--filename")
    if len(value) > FILENAME_FILTER_MAX_CHARS:
        raise typer.BadParameter(f"at most {FILENAME_FILTER_MAX_CHARS} characters", param_hint="--filename")
    return value.strip()


@documents_app.command("list")
def documents_list(
    tag: Annotated[str | None, typer.Option("--tag", help="Only documents with this tag.")] = None,
    filename: Annotated[
        str | None,
        typer.Option(
            "--filename",
            help="Only file names containing this (case-insensitive), or matching it whole when it is a glob "
            "(`*` `?` `[...]`, e.g. '*.pdf').",
            callback=filename_filter,
        ),
    ] = None,
    sort: Annotated[
        DocumentSortKey, typer.Option("--sort", help="Sort by creation time, file name or chunk count.")
    ] = DocumentSortKey.CREATED_AT,
    order: Annotated[
        ListOrder, typer.Option("--order", help="Ascending or descending (ties: by id).")
    ] = ListOrder.DESC,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500)] = 50,
    as_json: AsJson = False,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="Only this collection's documents (default: all).")
    ] = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """List documents, newest first (or as --sort/--order say); --filename and --tag narrow the list."""
    page = run_with_client(
        url,
        api_key,
        lambda client: client.list_documents(
            DocumentListing(
                offset=offset,
                limit=limit,
                tag=tag,
                collection=collection,
                sort=sort.value,
                order=order.value,
                filename=filename,
            )
        ),
    )
    if as_json:
        print_json(page)
        return
    if not page.items:
        if page.total:
            print_note(f"No documents at offset {offset} (of {page.total}).")
        else:
            print_note("No documents match." if tag or filename else "No documents.")
        return
    columns = [
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("collection", width=10),
        Column("source", flexible=True),
        Column("type", width=6),
        Column("chunks", justify="right"),
        Column("tags", width=12),
        Column("created", on_terminal=lambda stamp: stamp[:10]),
    ]
    rows = [
        [
            document.document_id,
            document.collection or "",
            document.source_id,
            document.source_type,
            str(document.chunk_count),
            ",".join(document.tags),
            document.created_at,
        ]
        for document in page.items
    ]
    print_rows(columns, rows, title=f"Documents {offset + 1}–{offset + len(page.items)} of {page.total}")


@documents_app.command("show")
def documents_show(
    reference: Annotated[str, typer.Argument(help="The document's id, id prefix, source id or file name.")],
    chunks: Annotated[int, typer.Option("--chunks", min=0, max=1000, help="How many chunks to list.")] = 20,
    full: Annotated[bool, typer.Option("--full", help="Print each chunk's whole text.")] = False,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="Look only in this collection (default: all).")
    ] = None,
    as_json: AsJson = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """A document's metadata and its chunks, with their pages."""

    async def work(client: CarragClient) -> tuple[DocumentOut, ChunkPageOut | None]:
        document = await resolve_document(client, reference, collection)
        listed = await client.get_chunks(document.document_id, limit=chunks) if chunks else None
        return document, listed

    document, listed = run_with_client(url, api_key, work)
    if as_json:
        print_json({"document": document, "chunks": listed})
        return
    fields = []
    for key in (
        "document_id",
        "filename",
        "source_id",
        "source_type",
        "title",
        "chunk_count",
        "tags",
        "content_hash",
        "created_at",
    ):
        value = getattr(document, key)
        fields.append((key, ", ".join(value) if isinstance(value, list) else str(value if value is not None else "-")))
    for prefix, metadata in (("metadata", document.metadata), ("system", document.system_metadata)):
        for key, value in metadata.items():
            shown = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)
            fields.append((f"{prefix}.{key}", shown))
    print_fields(fields)
    if not listed:
        return
    if not console.is_terminal:
        typer.echo("")
    columns = [Column("#", justify="right"), Column("page", width=12), Column("chars"), Column("text", flexible=True)]
    rows = [
        [str(chunk.chunk_index), pages_label(chunk.pages), f"{chunk.char_start}–{chunk.char_end}", chunk.text]
        for chunk in listed.items
    ]
    title = f"Chunks 1–{len(listed.items)} of {listed.total}"
    if full and console.is_terminal:
        table = Table(title=title)
        for column in ("#", "page", "chars"):
            table.add_column(column, no_wrap=True)
        table.add_column("text", ratio=1)
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    else:
        print_rows(columns, rows, title=title)


@documents_app.command("delete")
def documents_delete(
    reference: Annotated[
        str | None, typer.Argument(help="The document's id, id prefix, source id or file name.")
    ] = None,
    source: Annotated[
        str | None, typer.Option("--source", help="Delete the document stored under this source id instead.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    collection: Annotated[
        str | None,
        typer.Option("--collection", "-c", help="Look only in this collection (default: all; with --source: default)."),
    ] = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Delete a document and all its chunks."""
    if source is not None:
        if reference is not None:
            raise typer.BadParameter("give a document or --source, not both", param_hint="--source")
        delete_by_source(source, collection, yes, url, api_key)
        return
    if reference is None:
        raise typer.BadParameter("give a document (id, id prefix, source id or file name) or --source")

    async def work(client: CarragClient) -> str | None:
        document = await resolve_document(client, reference, collection)
        question = f"Delete document {document.document_id} ({document.source_id}) and all its chunks?"
        if not yes and not typer.confirm(question):
            return None
        await client.delete_document(document.document_id)
        return f"Deleted {document.document_id} ({document.source_id})."

    done = run_with_client(url, api_key, work)
    if done is None:
        raise typer.Exit(1)
    typer.echo(done)


@app.command()
def health(as_json: AsJson = False, url: Url = None, api_key: ApiKey = None) -> None:
    """Each component's state (store, embedder, LLM, reranker); exit 1 when the store or embedder is unavailable."""
    report = run_with_client(url, api_key, lambda client: client.health())
    if as_json:
        print_json(report)
    else:
        rows = [
            [name, component.status, component.backend, component.model or "-", component.detail or ""]
            for name, component in report.components.items()
        ]
        columns = [Column("component"), Column("status"), Column("backend"), Column("model", width=24)]
        print_rows([*columns, Column("detail", flexible=True)], rows, title=f"Carrag {report.version}: {report.status}")
    if report.status == "unavailable":
        raise typer.Exit(1)


@app.command()
def jobs(
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Most recent jobs to list.")] = 50,
    as_json: AsJson = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Recent ingest jobs, newest first: a server's async ingests, as recorded in its store."""
    listed = run_with_client(url, api_key, lambda client: client.list_jobs(limit=limit))
    if as_json:
        print_json(listed)
        return
    if not listed.items:
        print_note("No jobs.")
        return
    columns = [
        Column("job_id", on_terminal=short_id, terminal_header="job"),
        Column("state", width=9),
        Column("progress", justify="right"),
        Column("source", flexible=True),
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("created", on_terminal=lambda stamp: stamp[11:19]),
    ]
    rows = [
        [
            job.job_id,
            job.state,
            f"{job.progress.done}/{job.progress.total}" if job.progress.total else "",
            job.source,
            job.result.document_id if job.result else "",
            job.created_at,
        ]
        for job in listed.items
    ]
    print_rows(columns, rows, title=f"Jobs: {len(listed.items)} of {listed.total}")


def delete_by_source(source_id: str, collection: str | None, yes: bool, url: str | None, api_key: str | None) -> None:
    if not yes and not typer.confirm(f"Delete the document with source id {source_id} and all its chunks?"):
        raise typer.Exit(1)
    deleted = run_with_client(url, api_key, lambda client: client.delete_by_source(source_id, collection))
    for document in deleted.documents:
        console.print(f"Deleted {escape(document.document_id)} ({escape(document.filename)}).")


@documents_app.command("download")
def documents_download(
    reference: Annotated[str, typer.Argument(help="The document's id, id prefix, source id or file name.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (`-` for stdout); default: the original's file name here."),
    ] = None,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Save a document's original file (as uploaded or fetched)."""
    opened: list[tuple[Path, BinaryIO]] = []

    def open_destination(filename: str) -> BinaryIO:
        if output is not None and str(output) == "-":
            return sys.stdout.buffer
        # the server's name, never a path: a name like ../x stays in the working directory
        path = output or Path(Path(filename.replace("\\", "/")).name or "original")
        try:
            handle = path.open("wb" if output is not None else "xb")  # the default name never overwrites
        except FileExistsError:
            raise ClientError(f"{path} exists; choose another name with -o") from None
        opened.append((path, handle))
        return handle

    async def work(client: CarragClient) -> tuple[str, int]:
        document = await resolve_document(client, reference)
        return await client.download_original(document.document_id, open_destination)

    try:
        filename, size = run_with_client(url, api_key, work)
    except BaseException:
        for path, handle in opened:  # nothing half-written is left behind
            handle.close()
            path.unlink(missing_ok=True)
        raise
    for _, handle in opened:
        handle.close()
    if opened:
        errors.print(f"Saved {escape(filename)} ({size:,} bytes) to {escape(str(opened[0][0]))}.")


@app.command()
def reset(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Delete every document and chunk, and the recorded embedding model (after changing the model)."""
    if not yes and not typer.confirm("Delete every document and chunk in the store?"):
        raise typer.Exit(1)
    done = run_with_client(url, api_key, lambda client: client.reset())
    console.print(f"Store reset: {plural(done.documents_deleted, 'document')} deleted. Ingest again to refill it.")


SHARED_DATA = Path("../shared/data")  # beside the checkout (docs/benchmarks.md)


@app.command("eval")
def evaluate_retrieval(
    dataset: Annotated[Path, typer.Option("--dataset", help="BEIR directory: corpus.jsonl, queries.jsonl, qrels/.")],
    split: Annotated[str, typer.Option("--split", help="Which qrels/<split>.tsv to score.")] = "train",
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the table as JSON to this file.")] = None,
    modes: Annotated[
        str | None, typer.Option("--modes", help="Comma-separated subset of bm25,knn,hybrid,hybrid+rerank.")
    ] = None,
    limit_queries: Annotated[
        int | None, typer.Option("--limit-queries", min=1, help="Score only the first N queries.")
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="Keep the evaluation store in this SQLite file; an existing one is reused without re-ingesting.",
        ),
    ] = None,
) -> None:
    """Ingest a BEIR dataset into a fresh store and print nDCG@10, Recall@10/100 and MRR@10 per search mode."""
    extras.require("eval", "`carrag eval`")
    from carrag.cli.evaluation import run_eval_command

    run_eval_command(dataset, split, json_out, modes, limit_queries, db)


@app.command("eval-answers")
def evaluate_answers(
    questions: Annotated[
        Path, typer.Option("--questions", help="Question file (JSON Lines, carrag/bench/questions/corpus_dev.jsonl).")
    ],
    mode: Annotated[
        str, typer.Option("--mode", help="Answer mode: generate, extract, auto, a comma-separated list, or all.")
    ] = "all",
    documents: Annotated[
        Path, typer.Option("--documents", help="Directory the question file's document paths are relative to.")
    ] = SHARED_DATA / "corpus",
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, max=100, help="Passages per question.")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the scores and every answer as JSON to this file.")
    ] = None,
) -> None:
    """Ingest the documents a question file lists into a fresh store, ask every question in each answer
    mode, and print answerable accuracy, citation validity, refusals, invented numbers and latency."""
    from carrag.cli.answer_evaluation import run_eval_answers_command

    run_eval_answers_command(questions, mode, documents, top_k, json_out)


@app.command("bench")
def benchmark(
    pdf: Annotated[Path, typer.Option("--pdf", help="PDF whose extraction speed is measured.")] = SHARED_DATA
    / "corpus/pdf/unstructured/DA-619p.pdf",
    dataset: Annotated[
        Path, typer.Option("--dataset", help="BEIR directory ingested for the ingestion and query figures.")
    ] = SHARED_DATA / "scifact-dev",
    split: Annotated[str, typer.Option("--split", help="qrels split whose queries are timed.")] = "train",
    sizes: Annotated[
        str, typer.Option("--sizes", help="Comma-separated store sizes (chunks) for the query figures.")
    ] = "20000,100000",
    queries: Annotated[int, typer.Option("--queries", min=1, help="Timed queries per store size.")] = 200,
    limit_documents: Annotated[
        int | None, typer.Option("--limit-documents", min=1, help="Ingest only the first N documents.")
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Tiny sizes (a few seconds): checks the bench still works.")
    ] = False,
    ocr_pages: Annotated[
        int, typer.Option("--ocr-pages", min=0, help="Scanned copies of the PDF's first N pages read by OCR (0: none).")
    ] = 3,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures as JSON to this file.")
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="`elasticsearch`: instead, the store at ELASTICSEARCH_URL against raw bulk and raw hybrid search.",
        ),
    ] = None,
    documents: Annotated[
        int, typer.Option("--documents", min=1, help="With --store elasticsearch: synthetic documents written.")
    ] = 1000,
) -> None:
    """Measure PDF pages/s, OCR pages/s, ingestion chunks/s against the raw embedder, /search p50/p95 and peak RSS."""
    if store == "elasticsearch":
        from carrag.cli.evaluation import run_es_bench_command

        run_es_bench_command(documents, queries, quick, json_out)
        return
    if store not in (None, "sqlite"):
        raise typer.BadParameter("--store is sqlite (the default bench) or elasticsearch")
    extras.require("eval", "`carrag bench`")
    from carrag.bench.bench import BenchConfig
    from carrag.cli.evaluation import run_bench_command

    if quick:
        config = BenchConfig.quick(pdf, dataset, split)
    else:
        config = BenchConfig(
            pdf,
            dataset,
            split,
            tuple(int(size) for size in sizes.split(",") if size.strip()),
            queries,
            limit_documents,
            ocr_pages=ocr_pages,
        )
    run_bench_command(config, json_out)


@app.command()
def reindex(
    keep_old: Annotated[
        bool, typer.Option("--keep-old", help="Keep the previous index after the alias has moved.")
    ] = False,
) -> None:
    """Re-embed every document with the configured model. SQLite: new vectors beside the old ones,
    swapped in by one transaction at the end (interrupt and re-run: it continues). Elasticsearch: a
    new index, then the alias moves (writes pause for the final catch-up)."""
    from carrag.cli.reindex import run_reindex

    run_reindex(Settings(), keep_old)


@app.command()
def mcp() -> None:
    """Serve the MCP tools (search_documents, list_sources) over stdio, on the local store."""
    extras.require("mcp", "`carrag mcp`")
    from carrag.api.log_config import configure_logging
    from carrag.api.mcp_server import run_stdio

    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)  # to stderr: stdout carries the protocol
    asyncio.run(run_stdio(settings))


def store_epilog() -> str:
    """The store local commands use, for the end of `carrag --help` (DATA_DIR has a per-user default)."""
    try:
        settings = Settings()
    except (ValidationError, ValueError) as exc:  # a bad setting is reported by the command that needs it
        return f"Store: the settings are invalid ({str(exc).splitlines()[0]})."
    hint = settings.legacy_store_hint()
    return (
        f"Store in use without --url: {settings.store} at {settings.store_location} "
        "(set DATA_DIR or STORE to use another; --url / CARRAG_URL talks to a server instead)."
        + (f"\n\nNote: {hint}" if hint else "")
    )


def main() -> None:
    app.info.epilog = store_epilog()
    try:
        app()
    except MissingExtra as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()

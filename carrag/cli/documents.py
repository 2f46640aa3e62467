"""`carrag documents list|show|delete|download`: the stored documents, named by id, id prefix, source id
or file name (`carrag.cli.references`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.markup import escape
from rich.table import Table

from carrag.api.schemas.documents import ChunkPageOut, DocumentOut
from carrag.cli.client import ClientError, DocumentListing
from carrag.cli.clients import CarragClient
from carrag.cli.options import ApiKey, AsJson, Url
from carrag.cli.output import Column, pages_label, print_fields, print_json, print_note, print_rows, short_id
from carrag.cli.references import resolve_document
from carrag.cli.running import console, errors, run_with_client
from carrag.services.stores.base import DocumentSort, SortOrder

documents_app = typer.Typer(help="List, inspect and delete documents.", no_args_is_help=True)

REFERENCE_HELP = "The document's id, id prefix, source id or file name."
DocumentReference = Annotated[str, typer.Argument(help=REFERENCE_HELP)]


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
        DocumentSort, typer.Option("--sort", help="Sort by creation time, file name or chunk count.")
    ] = "created_at",
    order: Annotated[SortOrder, typer.Option("--order", help="Ascending or descending (ties: by id).")] = "desc",
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
                sort=sort,
                order=order,
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
    # On an 80-column terminal: id, source (its end: what tells files of one folder apart), chunks,
    # date and title; wider ones add tags, collection and type. Plain output has them all.
    columns = [
        Column("document_id", on_terminal=short_id, terminal_header="id"),
        Column("collection", width=10, terminal_min_width=120),
        Column("source", flexible=True, cut="start"),
        Column("type", width=6, terminal_min_width=120),
        Column("chunks", justify="right"),
        Column("tags", width=20, flexible=True, terminal_min_width=100),
        Column("created", on_terminal=lambda stamp: stamp[:10]),
        Column("title", flexible=True),
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
            document.title or "",
        ]
        for document in page.items
    ]
    print_rows(columns, rows, title=f"Documents {offset + 1}–{offset + len(page.items)} of {page.total}")


@documents_app.command("show")
def documents_show(
    reference: DocumentReference,
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
        "collection",
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
    reference: Annotated[str | None, typer.Argument(help=REFERENCE_HELP)] = None,
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


def delete_by_source(source_id: str, collection: str | None, yes: bool, url: str | None, api_key: str | None) -> None:
    if not yes and not typer.confirm(f"Delete the document with source id {source_id} and all its chunks?"):
        raise typer.Exit(1)
    deleted = run_with_client(url, api_key, lambda client: client.delete_by_source(source_id, collection))
    for document in deleted.documents:
        console.print(f"Deleted {escape(document.document_id)} ({escape(document.filename)}).")


@documents_app.command("download")
def documents_download(
    reference: DocumentReference,
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

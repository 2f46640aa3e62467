"""`carrag collections list|create|rename|delete`: the knowledge bases, on the local store or a server."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from carrag.cli.options import ApiKey, AsJson, Url
from carrag.cli.output import Column, print_json, print_rows, short_id
from carrag.cli.running import console, run_with_client

collections_app = typer.Typer(
    help="List, create, rename and delete collections (knowledge bases).", no_args_is_help=True
)


@collections_app.command("list")
def collections_list(as_json: AsJson = False, url: Url = None, api_key: ApiKey = None) -> None:
    """Every collection with its document count (`default` always exists)."""
    listing = run_with_client(url, api_key, lambda client: client.list_collections())
    if as_json:
        print_json(listing)
        return
    columns = [
        Column("collection_id", on_terminal=short_id, terminal_header="id"),
        Column("name", flexible=True),
        Column("documents", justify="right"),
        Column("created", on_terminal=lambda stamp: stamp[:19].replace("T", " ")),
    ]
    rows = [
        [collection.collection_id, collection.name, str(collection.document_count), collection.created_at]
        for collection in listing.items
    ]
    print_rows(columns, rows, title=f"{len(listing.items)} collections")


@collections_app.command("create")
def collections_create(
    name: Annotated[str, typer.Argument(help="Lower-case letters, digits, '-' and '_' (1-64).")],
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Create an empty collection."""
    created = run_with_client(url, api_key, lambda client: client.create_collection(name))
    console.print(f"created collection [bold]{escape(created.name)}[/bold]")


@collections_app.command("rename")
def collections_rename(
    name: Annotated[str, typer.Argument(help="The collection's current name.")],
    new_name: Annotated[str, typer.Argument(help="Its new name.")],
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Rename a collection (its documents are not touched)."""
    renamed = run_with_client(url, api_key, lambda client: client.rename_collection(name, new_name))
    console.print(f"renamed collection {escape(name)} to [bold]{escape(renamed.name)}[/bold]")


@collections_app.command("delete")
def collections_delete(
    name: Annotated[str, typer.Argument(help="The collection to delete, with every document in it.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    url: Url = None,
    api_key: ApiKey = None,
) -> None:
    """Delete a collection and every document and chunk in it."""
    if not yes:
        typer.confirm(f"Delete collection {name} and every document in it?", abort=True)
    deleted = run_with_client(url, api_key, lambda client: client.delete_collection(name))
    console.print(f"deleted collection {escape(deleted.name)} ({deleted.documents_deleted} documents)")

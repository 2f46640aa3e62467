"""`carrag collections list|create|rename|delete`: the knowledge bases, on the local store or a server."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from carrag.cli.output import Column, print_json, print_rows, short_id

collections_app = typer.Typer(
    help="List, create, rename and delete collections (knowledge bases).", no_args_is_help=True
)
console = Console(highlight=False)

Url = Annotated[
    str | None,
    typer.Option("--url", envvar="CARRAG_URL", help="A running Carrag server; without it, work on the local store."),
]
ApiKey = Annotated[
    str | None, typer.Option("--api-key", envvar="CARRAG_API_KEY", help="Bearer key for a server with API_KEYS.")
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the raw JSON answer.")]


@collections_app.command("list")
def collections_list(as_json: AsJson = False, url: Url = None, api_key: ApiKey = None) -> None:
    """Every collection with its document count (`default` always exists)."""
    from carrag.cli.main import run_with_client

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
    from carrag.cli.main import run_with_client

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
    from carrag.cli.main import run_with_client

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
    from carrag.cli.main import run_with_client

    if not yes:
        typer.confirm(f"Delete collection {name} and every document in it?", abort=True)
    deleted = run_with_client(url, api_key, lambda client: client.delete_collection(name))
    console.print(f"deleted collection {escape(deleted.name)} ({deleted.documents_deleted} documents)")

"""The options several `carrag` commands share (one definition each, so their names and help agree)."""

from __future__ import annotations

from typing import Annotated

import typer

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

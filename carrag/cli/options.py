"""The options several `carrag` commands share (one definition each, so their names and help agree).
Help shows a default's value, as the settings define it, and the setting that changes it (on the
server's side with --url)."""

from __future__ import annotations

from typing import Annotated

import typer

from carrag.services.settings import Settings

DEFAULT_TOP_K = Settings.model_fields["default_top_k"].default

Url = Annotated[
    str | None,
    typer.Option("--url", envvar="CARRAG_URL", help="A running Carrag server; without it, work on the local store."),
]
ApiKey = Annotated[
    str | None, typer.Option("--api-key", envvar="CARRAG_API_KEY", help="Bearer key for a server with API_KEYS.")
]
TopK = Annotated[
    int | None,
    typer.Option(
        "--top-k",
        "-k",
        min=1,
        max=100,
        help=f"Passages to retrieve (default: {DEFAULT_TOP_K}, or DEFAULT_TOP_K if set).",
    ),
]
Tags = Annotated[str | None, typer.Option("--tags", help="Comma-separated tags: only documents with any of them.")]
SourceFilter = Annotated[str | None, typer.Option("--source", help="Only this source id, or a glob (`*.md`).")]
Rerank = Annotated[
    bool | None,
    typer.Option(
        "--rerank/--no-rerank",
        help="Rerank the passages or not (default: rerank when the reranker model is installed; RERANK_ENABLED).",
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the API's JSON (the same shape as over HTTP).")]
CollectionOption = Annotated[
    str | None, typer.Option("--collection", "-c", help="The collection (knowledge base); default: `default`.")
]
CollectionsOption = Annotated[
    list[str] | None,
    typer.Option("--collection", "-c", help="Search this collection (repeat for several); default: `default`."),
]

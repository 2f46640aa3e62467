"""`carrag reindex`: re-embed the Elasticsearch index into a new generation and swap its alias."""

from __future__ import annotations

import asyncio

import typer
from rich.console import Console
from rich.markup import escape

from carrag.services.errors import CarragError
from carrag.services.settings import Settings

console = Console()


def run_reindex(settings: Settings, keep_old: bool) -> None:
    if settings.store != "elasticsearch":
        console.print("carrag reindex works on STORE=elasticsearch (a SQLite store is re-ingested with --force).")
        raise typer.Exit(2)
    try:
        result = asyncio.run(_reindex(settings, keep_old))
    except CarragError as exc:
        console.print(f"[red]error:[/red] {escape(exc.message)}")
        raise typer.Exit(1) from exc
    console.print(
        f"Reindexed {result.documents} documents ({result.chunks} chunks, {result.caught_up} caught up after "
        f"blocking writes) from {result.old_index} into {result.new_index}; "
        + ("old index deleted." if result.old_deleted else f"old index {result.old_index} kept.")
    )


async def _reindex(settings: Settings, keep_old: bool):
    from carrag.services.container import build_container
    from carrag.services.stores.elasticsearch.reindex import reindex

    container = await build_container(settings.model_copy(update={"llm": "none", "tagger": "off"}))
    try:
        return await reindex(
            container.store,  # type: ignore[arg-type]
            container.embedder,
            keep_old=keep_old,
            report=lambda line: console.print(escape(line)),
        )
    finally:
        await container.store.close()

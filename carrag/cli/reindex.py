"""`carrag reindex`: re-embed every document with the configured model (`services/reindexing.py`)."""

from __future__ import annotations

import asyncio

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from carrag.services.errors import CarragError
from carrag.services.reindexing import ReindexStatus
from carrag.services.settings import Settings

console = Console()


def run_reindex(settings: Settings, keep_old: bool) -> None:
    try:
        status = asyncio.run(_reindex(settings, keep_old))
    except CarragError as exc:
        console.print(f"[red]error:[/red] {escape(exc.message)}")
        if settings.store == "sqlite" and "already open in another Carrag process" in exc.message:
            console.print("While the server runs, start the reindex there: POST /admin/reindex (docs/api.md).")
        raise typer.Exit(1) from exc
    except KeyboardInterrupt:
        console.print("Interrupted: the vectors embedded so far are kept; run `carrag reindex` again to continue.")
        raise typer.Exit(130) from None
    console.print(
        f"Reindexed with {escape(status.model or '?')}: {status.done} {status.unit} in {status.seconds:.0f} s"
        + (f"; {escape(status.detail)}" if status.detail else "")
    )


async def _reindex(settings: Settings, keep_old: bool) -> ReindexStatus:
    from carrag.services.container import build_container

    container = await build_container(settings.model_copy(update={"llm": "none", "tagger": "off"}))
    try:
        with Progress(
            TextColumn("re-embedding"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        ) as bar:
            unit = "chunks" if container.store.backend == "sqlite" else "documents"
            task = bar.add_task("reindex", total=None, unit=unit)
            return await container.reindexer.run(
                lambda done, total: bar.update(task, completed=done, total=total), keep_old=keep_old
            )
    finally:
        await container.aclose()

"""How a command runs: it opens a client (the local store, or a server with ``--url``), does its async
work with it, and turns a client failure into a message and an exit status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from carrag.cli.client import ClientError
from carrag.cli.clients import CarragClient, HttpClient, LocalClient
from carrag.cli.references import AMBIGUOUS_EXIT_CODE, AmbiguousReference, print_candidates
from carrag.services.settings import Settings

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)
T = TypeVar("T")


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

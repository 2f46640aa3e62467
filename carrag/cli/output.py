"""How CLI commands print data: one description of the columns, three renderings.

- On a terminal: a rich table that fits the terminal's width. Every column stays on one line; long
  cells are cut with an ellipsis (never wrapped a few characters a line); ids are shortened to their
  first `SHORT_ID` characters, which `carrag documents show|delete` accept back as a prefix.
- Not on a terminal (a pipe, a file, a script): tab-separated lines, a header line first, full
  values (whole ids, whole timestamps), tabs and newlines inside a value turned into spaces, so
  ``cut -f1`` and ``awk -F'\\t'`` work.
- ``--json``: the API's own JSON for the same data (`carrag.api.schemas`), so a script sees the
  same shape from the CLI as from HTTP.

Rich decides what is a terminal: ``TTY_COMPATIBLE=1`` forces tables into a pipe (``| less -S``),
``TTY_COMPATIBLE=0`` forces plain lines; ``COLUMNS`` sets the width.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import typer
from pydantic_core import to_jsonable_python
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

SHORT_ID = 8


def stdout() -> Console:
    """A console made at print time, so the environment of this invocation (COLUMNS, TTY_COMPATIBLE) counts."""
    return Console(highlight=False, soft_wrap=False)


def stderr() -> Console:
    """Messages are not cut into lines here (the terminal wraps them), so they stay greppable."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def short_id(value: str) -> str:
    return value[:SHORT_ID]


def one_line(text: str, limit: int | None = None) -> str:
    flat = " ".join(text.split())
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Column:
    """``width``: the most characters the column takes in a table (None: as wide as its cells);
    ``flexible`` columns give way first when the table is too wide for the terminal. ``on_terminal``
    shortens a cell for the table only (ids), under ``terminal_header`` if given; plain output always
    has the full value under ``header``."""

    header: str
    width: int | None = None
    flexible: bool = False
    justify: Literal["left", "right"] = "left"
    on_terminal: Callable[[str], str] | None = None
    terminal_header: str | None = None


COLUMN_GAP = 2  # characters between table columns: right padding 1 + the box separator 1
FLEXIBLE_MIN = 12  # a flexible column keeps at least this much (or its header) before others shrink
SHRUNK_MIN = 4


def print_rows(
    columns: Sequence[Column],
    rows: Iterable[Sequence[str]],
    *,
    title: str | None = None,
    console: Console | None = None,
) -> None:
    console = console or stdout()
    rows = list(rows)
    if not console.is_terminal:
        for line in [[c.header for c in columns], *rows]:
            console.file.write("\t".join(plain_cell(cell) for cell in line) + "\n")
        return
    headers = [column.terminal_header or column.header for column in columns]
    cells = [
        [
            one_line(column.on_terminal(cell) if column.on_terminal else cell)
            for column, cell in zip(columns, row, strict=True)
        ]
        for row in rows
    ]
    widths = fitted_widths(columns, headers, cells, console.width)
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),  # with the separator column of SIMPLE_HEAD: COLUMN_GAP
        collapse_padding=False,
        title_justify="left",
    )
    for column, header, width in zip(columns, headers, widths, strict=True):
        table.add_column(escape(header), justify=column.justify, no_wrap=True, overflow="ellipsis", width=width)
    for row in cells:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)


def fitted_widths(
    columns: Sequence[Column], headers: Sequence[str], cells: Sequence[Sequence[str]], total: int
) -> list[int]:
    """Each column as wide as its widest cell in terminal cells (at most ``Column.width``); when that is wider than the
    terminal, flexible columns shrink first, then the widest of the others, one character at a time."""
    widths = []
    for index, column in enumerate(columns):
        natural = max([cell_len(headers[index]), *(cell_len(row[index]) for row in cells)])
        widths.append(min(natural, column.width) if column.width else natural)
    budget = max(total - COLUMN_GAP * (len(columns) - 1), len(columns))
    flexible_floor = [
        min(widths[i], max(FLEXIBLE_MIN, cell_len(headers[i]))) if column.flexible else widths[i]
        for i, column in enumerate(columns)
    ]
    for floors in (flexible_floor, [min(w, SHRUNK_MIN) for w in widths], [1] * len(widths)):
        while sum(widths) > budget:
            shrinkable = [i for i in range(len(widths)) if widths[i] > floors[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: (columns[i].flexible, widths[i]))
            widths[widest] -= 1
    return widths


def print_fields(fields: Sequence[tuple[str, str]], *, console: Console | None = None) -> None:
    """Key/value pairs: aligned on a terminal (long values fold under their key), ``key<TAB>value`` otherwise."""
    console = console or stdout()
    if not console.is_terminal:
        for key, value in fields:
            console.file.write(f"{key}\t{plain_cell(value)}\n")
        return
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in fields:
        grid.add_row(escape(key), escape(value))
    console.print(grid)


def plain_cell(value: str) -> str:
    return value.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def print_json(value: Any) -> None:
    typer.echo(json.dumps(to_jsonable_python(value), indent=2, ensure_ascii=False))


def print_note(text: str) -> None:
    """A remark for people (empty results, totals): on stdout for a terminal, on stderr in a pipe so
    that a script reading the rows gets rows only."""
    console = stdout()
    (console if console.is_terminal else stderr()).print(escape(text))


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

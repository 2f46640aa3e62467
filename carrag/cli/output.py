"""How CLI commands print data, from one description of the columns: a rich table fitted to the terminal
(cells cut, not wrapped; ids shortened to `SHORT_ID`, which the commands accept back), tab-separated
lines with full values when not on a terminal, or ``--json`` with the API's own shapes.
``TTY_COMPATIBLE`` and ``COLUMNS`` override rich's detection.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import typer
from pydantic_core import to_jsonable_python
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
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
    ``flexible`` columns give way first when the table is too wide for the terminal; ``cut``: which
    end of a long cell gives way (``start`` for paths: ``…/guide/install.md``). ``on_terminal``
    shortens a cell for the table only (ids), under ``terminal_header`` if given; ``terminal_min_width``:
    the column is left out of tables on terminals narrower than this. Plain output always has every
    column and the full value under ``header``."""

    header: str
    width: int | None = None
    flexible: bool = False
    justify: Literal["left", "right"] = "left"
    on_terminal: Callable[[str], str] | None = None
    terminal_header: str | None = None
    cut: Literal["start", "end"] = "end"
    terminal_min_width: int = 0


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
    shown = [index for index, column in enumerate(columns) if console.width >= column.terminal_min_width]
    columns = [columns[index] for index in shown]
    headers = [column.terminal_header or column.header for column in columns]
    cells = [
        [
            one_line(column.on_terminal(row[index]) if column.on_terminal else row[index])
            for column, index in zip(columns, shown, strict=True)
        ]
        for row in rows
    ]
    widths = fitted_widths(columns, headers, cells, console.width)
    for row in cells:
        for index, column in enumerate(columns):
            if column.cut == "start":
                row[index] = keep_end(row[index], widths[index])
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


def keep_end(text: str, width: int) -> str:
    """``text`` cut from its start to ``width`` terminal cells, "…" marking the cut."""
    if cell_len(text) <= width:
        return text
    kept: list[str] = []
    room = width - 1
    for character in reversed(text):
        room -= cell_len(character)
        if room < 0:
            break
        kept.append(character)
    return "…" + "".join(reversed(kept))


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


class WordWrap:
    """Text arriving in pieces (a streamed answer) written word-wrapped at ``width`` terminal cells: a
    word is held back until it is complete, so no line ever breaks inside one (a word longer than a
    line gets a line of its own, written as it comes: the terminal wraps it). ``width`` None (not a
    terminal): written as it comes."""

    TOKENS = re.compile(r"\n|[^\S\n]+|\S+")

    def __init__(self, write: Callable[[str], None], width: int | None) -> None:
        self.write = write
        self.width = width
        self.column = 0
        self.space = ""  # whitespace not written yet: it goes before the next word on the same line
        self.held = ""  # a word that may continue in the next piece

    def feed(self, text: str) -> None:
        if self.width is None:
            self.write(text)
            return
        tokens = self.TOKENS.findall(self.held + text)
        self.held = tokens.pop() if tokens and not tokens[-1].isspace() else ""
        if cell_len(self.held) > self.width:  # no line holds it (text without spaces): no reason to wait
            tokens.append(self.held)
            self.held = ""
        for token in tokens:
            self._token(token)

    def close(self) -> None:
        """Write what is held; the next text starts a new line's count."""
        if self.held:
            self._token(self.held)
        self.held = self.space = ""
        self.column = 0

    def _token(self, token: str) -> None:
        assert self.width is not None
        if token == "\n":
            self.write("\n")
            self.column, self.space = 0, ""
        elif token.isspace():
            self.space += token
        else:
            needed = cell_len(self.space) + cell_len(token)
            if self.column and self.column + needed > self.width:
                self.write("\n")
                self.column, self.space = 0, ""
                needed = cell_len(token)
            self.write(self.space + token)
            self.column += needed
            self.space = ""


TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")
BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s|\d{1,4}[.)]\s|#{1,6}\s|\|)")


def readable_paragraphs(text: str) -> list[str]:
    """A passage's Markdown as paragraphs for a terminal: lines of prose joined (PDF text breaks every
    line), list items, headings and table rows each their own paragraph (a row's cells between " │ ",
    the row of dashes under a header left out), backslash escapes resolved."""
    paragraphs: list[str] = []
    joining = False
    for raw in text.splitlines():
        line = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", raw).strip()
        if not line or (TABLE_RULE.match(line) and "-" in line):
            joining = False
            continue
        if line.startswith("|"):
            line = " │ ".join(cell.strip() for cell in line.strip("|").split("|"))
        elif line.startswith("#"):
            line = line.lstrip("#").strip().rstrip("¶").strip()
        if joining and not BLOCK_START.match(raw):
            paragraphs[-1] += " " + line
        else:
            paragraphs.append(line)
        joining = not raw.lstrip().startswith(("|", "#"))
    return paragraphs


def progress_bars(out: Console, *, transient: bool = True) -> Progress:
    """Description, bar, done/total and time elapsed. Transient bars (a spinner first) show on a terminal
    only; the others stay as the record of a long run."""
    spinner = [SpinnerColumn()] if transient else []
    columns = [*spinner, TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    return Progress(*columns, console=out, transient=transient, disable=transient and not out.is_terminal)

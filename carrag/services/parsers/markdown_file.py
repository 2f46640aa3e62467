"""`.md` / `.markdown` files: the text as written, its first `#` heading as the title, and the HTML
tables such files often embed (``<table>`` … ``</table>`` outside code fences) read as Markdown tables
by the HTML parser's converter, so their rows reach chunks and answers as rows, not as tags."""

from __future__ import annotations

import re

from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.html_markdown import check_markup, html_fragment_markdown
from carrag.services.parsers.text import first_markdown_h1, parse_text

_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_HTML_TABLE = re.compile(r"^[ \t]*<table\b.*?</table>[ \t]*$", re.IGNORECASE | re.DOTALL | re.MULTILINE)


def parse_markdown(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    parsed = parse_text(data, filename)
    parsed.text = html_tables_as_markdown(parsed.text, filename, budget)
    parsed.title = first_markdown_h1(parsed.text)
    parsed.metadata |= {"markup": "markdown", "title": parsed.title}
    return parsed


def html_tables_as_markdown(text: str, filename: str, budget: ParseBudget = DEFAULT_BUDGET) -> str:
    if "<table" not in text.lower():
        return text
    parts: list[str] = []
    prose: list[str] = []
    fenced: str | None = None
    for line in text.splitlines(keepends=True):
        fence = _FENCE.match(line)
        if fenced is None and fence:
            parts.append(_converted("".join(prose), filename, budget))
            prose, fenced = [line], fence.group(1)
        elif fenced is not None:
            prose.append(line)
            if fence and fence.group(1) == fenced:
                parts.append("".join(prose))
                prose, fenced = [], None
        else:
            prose.append(line)
    parts.append("".join(prose) if fenced is not None else _converted("".join(prose), filename, budget))
    return "".join(parts)


def _converted(prose: str, filename: str, budget: ParseBudget) -> str:
    def table(match: re.Match[str]) -> str:
        check_markup(match.group(0), filename, budget)
        return html_fragment_markdown(match.group(0))

    return _HTML_TABLE.sub(table, prose)

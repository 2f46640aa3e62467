"""Table rows written as a Markdown table, the form every parser gives tables in (.docx, .odt, .pptx, .rtf, ruled PDF tables)."""

from __future__ import annotations


def markdown_table(rows: list[list[str]]) -> str:
    """The first row as the header; shorter rows padded with empty cells; a ``|`` in a cell escaped.
    No rows: ``""``."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    escaped = [[cell.replace("|", "\\|") for cell in row] for row in rows]
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in escaped]
    lines.insert(1, "| " + " | ".join(["---"] * width) + " |")
    return "\n".join(lines)

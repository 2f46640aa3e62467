"""Table rows written as a Markdown table, the form every parser gives tables in (.docx, .odt, .pptx, .rtf)."""

from __future__ import annotations


def markdown_table(rows: list[list[str]]) -> str:
    """The first row as the header; shorter rows padded with empty cells. No rows: ``""``."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
    lines.insert(1, "| " + " | ".join(["---"] * width) + " |")
    return "\n".join(lines)

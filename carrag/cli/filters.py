"""The CLI's document filters and user metadata options, shared by `carrag query`, `carrag search`
and `carrag ingest` (the request fields are the API's: docs/api.md, "Filters")."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from carrag.services.errors import InvalidInput
from carrag.services.requests import iso_timestamp, parse_metadata_pairs

Meta = Annotated[
    list[str] | None,
    typer.Option("--meta", help="key=value user metadata (repeat for several).", show_default=False),
]
MetaFilter = Annotated[
    list[str] | None,
    typer.Option(
        "--meta", help="Only documents whose metadata has key=value (repeat: all must match).", show_default=False
    ),
]
TagPrefix = Annotated[
    list[str] | None,
    typer.Option(
        "--tag-prefix", help="Only documents with a tag starting with this (repeat: any).", show_default=False
    ),
]
SourceType = Annotated[
    list[str] | None,
    typer.Option("--source-type", help="Only documents of this type, e.g. pdf (repeat: any).", show_default=False),
]
CreatedAfter = Annotated[
    str | None, typer.Option("--created-after", help="Only documents created at or after (ISO 8601).")
]
CreatedBefore = Annotated[
    str | None, typer.Option("--created-before", help="Only documents created before (ISO 8601).")
]
FileName = Annotated[str | None, typer.Option("--filename", help="Only file names matching this glob (`*.pdf`).")]


def metadata_option(pairs: list[str] | None, option: str = "--meta") -> dict[str, str]:
    """``--meta key=value`` options as a dict (a usage error when one is not key=value)."""
    try:
        return parse_metadata_pairs(pairs)
    except InvalidInput as exc:
        raise typer.BadParameter(exc.message, param_hint=option) from None


def filter_fields(
    meta: list[str] | None = None,
    tag_prefix: list[str] | None = None,
    source_type: list[str] | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    filename: str | None = None,
) -> dict[str, Any]:
    """The filter fields of a search or query request; only those given."""
    metadata = metadata_option(meta) if meta else None
    for name, value in (("created_after", created_after), ("created_before", created_before)):
        try:
            iso_timestamp(value, name)
        except InvalidInput as exc:
            raise typer.BadParameter(exc.message, param_hint="--" + name.replace("_", "-")) from None
    fields = {
        "metadata": metadata,
        "tag_prefix": tag_prefix,
        "source_type": source_type,
        "created_after": created_after,
        "created_before": created_before,
        "filename": filename,
    }
    return {name: value for name, value in fields.items() if value}

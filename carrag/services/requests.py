"""What callers ask the services for, validated once against the settings.

Every entry point (HTTP, the OpenAI-compatible API, MCP, the CLI) builds its requests here, so the
limits (MAX_QUESTION_CHARS, MAX_TOP_K) and the normalisation of tags and source filters are written once.
"""

from __future__ import annotations

from collections.abc import Iterable

from carrag.services.models import SearchFilters


def normalise_tags(tags: Iterable[str] | None) -> list[str]:
    """Tags as stored and matched: trimmed, lower case, no empties, no repeats (first kept)."""
    return list(dict.fromkeys(tag.strip().lower() for tag in tags or [] if tag.strip()))


def split_tags(raw: str | None) -> list[str]:
    """Comma-separated tags (a form field, a CLI option) as a list, trimmed, empties dropped."""
    return [tag.strip() for tag in (raw or "").split(",") if tag.strip()]


def search_filters(tags: Iterable[str] | None = None, source: str | None = None) -> SearchFilters:
    """Only documents with any of ``tags``; only the source id (or glob) ``source``."""
    return SearchFilters(tags=tuple(normalise_tags(tags)), source=(source or "").strip() or None)

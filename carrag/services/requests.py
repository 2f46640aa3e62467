"""What callers ask the services for (`SearchQuery`, `AnswerQuery`, `IngestCommand`), built and validated
against the settings once by `RequestFactory`, whatever the entry point (HTTP, OpenAI API, MCP, CLI).
A document's own tags, title and metadata have one check each, shared by ingest, PATCH and the wire schemas.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.answers.modes import AnswerMode
from carrag.services.errors import InvalidInput
from carrag.services.models import DEFAULT_COLLECTION, ChatMessage, MetadataValue, SearchFilters, metadata_value
from carrag.services.settings import Settings
from carrag.services.vocabulary import ChunkingStrategy, SearchMode


@dataclass(frozen=True, slots=True)
class SearchQuery:
    question: str
    top_k: int
    filters: SearchFilters = field(default_factory=SearchFilters)
    rerank: bool | None = None  # None: RERANK_ENABLED decides
    mode: SearchMode = SearchMode.HYBRID
    explain: bool = False  # report each hit's ranks and scores
    # the collections searched, by name (the search service resolves them: unknown → 404)
    collections: tuple[str, ...] = (DEFAULT_COLLECTION,)


@dataclass(frozen=True, slots=True)
class AnswerQuery:
    """A question to answer: the search that finds its passages (from `RequestFactory.search`, so
    validated there) and the conversation so far."""

    search: SearchQuery
    history: Sequence[ChatMessage] = ()
    answer_mode: AnswerMode | None = None  # None: ANSWER_MODE (or its per-stack default)
    min_relevance: float | None = None  # None: ANSWER_MIN_RELEVANCE
    max_tokens: int | None = None  # None: LLM_MAX_TOKENS (a request can only lower it)
    temperature: float | None = None  # None: LLM_TEMPERATURE
    client_instructions: str | None = None  # a client's system message, added after SYSTEM_PROMPT

    @property
    def question(self) -> str:
        return self.search.question


@dataclass(slots=True)
class IngestCommand:
    """How to ingest one document. ``force`` re-ingests content already stored under its source id;
    wiping a store built with another embedding model is `carrag reset` (`DocumentService.reset`)."""

    tags: list[str] = field(default_factory=list)
    source_id: str | None = None  # defaults to the filename or URL
    chunking: ChunkingStrategy | None = None  # default: CHUNKING_STRATEGY
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    force: bool = False
    external_id: str | None = None
    title: str | None = None
    metadata: dict[str, MetadataValue] = field(default_factory=dict)  # the user's (`user_metadata`)
    collections: tuple[str, ...] = (DEFAULT_COLLECTION,)  # exactly one: the collection ingested into

    @property
    def collection(self) -> str:
        return self.collections[0]


def collection_names(collection: str | None = None, collections: Iterable[str] | None = None) -> tuple[str, ...]:
    """The collection names a request names: ``collection`` or ``collections`` (not both), trimmed,
    repeats dropped; none means ``default``."""
    if collection is not None and collections is not None:
        raise InvalidInput("Give either collection or collections, not both.")
    names = [collection] if collection is not None else list(collections or [])
    cleaned = tuple(dict.fromkeys(name.strip() for name in names if name and name.strip()))
    return cleaned or (DEFAULT_COLLECTION,)


def normalise_tags(tags: Iterable[str] | None) -> list[str]:
    """Tags as stored and matched: trimmed, lower case, no empties, no repeats (first kept)."""
    return list(dict.fromkeys(tag.strip().lower() for tag in tags or [] if tag.strip()))


MAX_TAGS = 50
MAX_TAG_CHARS = 200
MAX_TITLE_CHARS = 1000


def user_tags(tags: Iterable[str] | None) -> list[str]:
    """A document's tags as a user gives them (every ingest, PATCH), normalised as stored and checked:
    at most 50, each at most 200 characters. InvalidInput otherwise."""
    checked = normalise_tags(tags)
    if len(checked) > MAX_TAGS:
        raise InvalidInput(f"{len(checked):,} tags given; the limit is {MAX_TAGS}.")
    for tag in checked:
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"the tag {tag[:40]!r}… is longer than {MAX_TAG_CHARS} characters.")
    return checked


def user_title(title: str | None) -> str | None:
    """A document's title as a user gives it (ingest, PATCH), trimmed and checked: not blank, at most
    1000 characters. InvalidInput otherwise; None stays None."""
    if title is None:
        return None
    title = title.strip()
    if not title:
        raise InvalidInput("The title must not be blank.")
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInput(f"The title is {len(title):,} characters long; the limit is {MAX_TITLE_CHARS}.")
    return title


MAX_FILENAME_CHARS = 255
# Control and format characters (a right-to-left override can make "cod.exe" read as "exe.doc"),
# surrogates and line or paragraph separators.
_HIDDEN_CHARACTER_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def display_filename(raw: str | None) -> str:
    """The name a client gave an upload, reduced to a display name: the last path component (``/`` or
    ``\\``), without control or format characters, trimmed, at most 255 characters (extension kept).
    InvalidInput when nothing is left."""
    name = re.split(r"[/\\]", raw or "")[-1]
    name = "".join(c for c in name if unicodedata.category(c) not in _HIDDEN_CHARACTER_CATEGORIES).strip()
    if name in ("", ".", ".."):
        raise InvalidInput("The uploaded file has no usable file name; the extension decides how it is parsed.")
    if len(name) > MAX_FILENAME_CHARS:
        extension = os.path.splitext(name)[1]
        extension = extension if len(extension) <= 20 else ""
        name = name[: MAX_FILENAME_CHARS - len(extension)] + extension
    return name


MAX_SOURCE_ID_CHARS = 2048


def user_source_id(raw: str | None) -> str | None:
    """A source id as a client gives it (a label: a file's path below the folder named, a URL, an
    external key), trimmed; control or format characters and ids over 2,048 characters are refused.
    It names a document and is never opened as a path."""
    source_id = (raw or "").strip()
    if not source_id:
        return None
    if any(unicodedata.category(c) in _HIDDEN_CHARACTER_CATEGORIES for c in source_id):
        raise InvalidInput("The source id holds control or format characters.")
    if len(source_id) > MAX_SOURCE_ID_CHARS:
        raise InvalidInput(
            f"The source id is {len(source_id):,} characters long; the limit is {MAX_SOURCE_ID_CHARS:,}."
        )
    return source_id


def split_tags(raw: str | None) -> list[str]:
    """Comma-separated tags (a form field, a CLI option) as a list, trimmed, empties dropped."""
    return [tag.strip() for tag in (raw or "").split(",") if tag.strip()]


def search_filters(tags: Iterable[str] | None = None, source: str | None = None) -> SearchFilters:
    """Only documents with any of ``tags``; only the source id (or glob) ``source``."""
    return SearchFilters(tags=tuple(normalise_tags(tags)), source=(source or "").strip() or None)


@dataclass(frozen=True, slots=True)
class MetadataFilters:
    """The document filters beyond tags and source (`SearchFilters`), as a caller gives them."""

    tag_prefixes: Iterable[str] | None = None  # documents with a tag starting with any of these
    metadata: Mapping[str, Any] | None = None  # user metadata key = value, all must match
    source_types: Iterable[str] | None = None  # any of these source types
    created_after: str | datetime | None = None  # ISO 8601 (naive: UTC); created at or after
    created_before: str | datetime | None = None  # ... strictly before
    filename: str | None = None  # file name glob (`*`, `?`, `[...]`, case-sensitive)

    def apply(self, filters: SearchFilters) -> SearchFilters:
        after = iso_timestamp(self.created_after, "created_after")
        before = iso_timestamp(self.created_before, "created_before")
        return dataclasses.replace(
            filters,
            tag_prefixes=tuple(normalise_tags(self.tag_prefixes)),
            metadata=tuple(sorted((key, metadata_value(value)) for key, value in user_metadata(self.metadata).items())),
            source_types=tuple(dict.fromkeys(t.strip().lower() for t in self.source_types or [] if t.strip())),
            created_after=after,
            created_before=before,
            filename_glob=(self.filename or "").strip() or None,
        )


METADATA_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
MAX_METADATA_KEYS = 50
MAX_METADATA_VALUE_CHARS = 1000


def user_metadata(raw: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """User metadata checked: at most 50 keys of 1–64 letters, digits, ``_ . : -`` (starting with a
    letter or digit), each value a string (≤ 1000 characters), number or boolean. InvalidInput otherwise."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise InvalidInput("metadata must be a JSON object of key/value pairs.")
    if len(raw) > MAX_METADATA_KEYS:
        raise InvalidInput(f"metadata has {len(raw)} keys; the limit is {MAX_METADATA_KEYS}.")
    checked: dict[str, MetadataValue] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not METADATA_KEY.fullmatch(key):
            raise InvalidInput(
                f"metadata key {key!r} is not allowed: 1-64 letters, digits, '_', '.', ':' or '-', "
                "starting with a letter or digit."
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"metadata value of {key!r} must be a finite number.")
        if not isinstance(value, str | int | float | bool):
            raise InvalidInput(f"metadata value of {key!r} must be a string, number or boolean.")
        if isinstance(value, str) and len(value) > MAX_METADATA_VALUE_CHARS:
            raise InvalidInput(f"metadata value of {key!r} is longer than {MAX_METADATA_VALUE_CHARS} characters.")
        checked[key] = value
    return checked


def parse_metadata_pairs(pairs: Iterable[str] | None) -> dict[str, str]:
    """``key=value`` strings (the CLI's repeated ``--meta``) as a dict; values stay strings."""
    parsed: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidInput(f"metadata {pair!r} must be key=value.")
        parsed[key.strip()] = value.strip()
    return parsed


def iso_timestamp(value: str | datetime | None, name: str) -> str | None:
    """An ISO 8601 date or date-time as UTC ISO 8601 text (a naive one is taken as UTC); InvalidInput
    when it is not one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(f"{name} must be an ISO 8601 date or date-time; got {value!r}.") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


class RequestFactory:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def search(
        self,
        question: str,
        *,
        top_k: int | None = None,
        tags: Iterable[str] | None = None,
        source: str | None = None,
        rerank: bool | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        explain: bool = False,
        filters: MetadataFilters | None = None,
        principal: Principal = FULL_ACCESS,
        collection: str | None = None,
        collections: Iterable[str] | None = None,
    ) -> SearchQuery:
        """A validated search; 403 (Forbidden) when ``principal`` may not read a collection it searches."""
        names = collection_names(collection, collections)
        principal.check_read(names)  # each collection searched, before whether it exists (no probing)
        restrictions = search_filters(tags, source)
        if filters is not None:
            restrictions = filters.apply(restrictions)
        return SearchQuery(
            self._question(question),
            self._top_k(top_k),
            restrictions,
            rerank,
            mode,
            explain,
            names,
        )

    def ingest(
        self,
        *,
        tags: Iterable[str] | None = None,
        source_id: str | None = None,
        chunking: ChunkingStrategy | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        force: bool = False,
        external_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        principal: Principal = FULL_ACCESS,
        collection: str | None = None,
    ) -> IngestCommand:
        """A validated ingest; 403 (Forbidden) when ``principal`` may not write to its collection."""
        names = collection_names(collection)
        principal.check_write(names[0])
        size = chunk_size or self.settings.chunk_size
        overlap = self.settings.chunk_overlap if chunk_overlap is None else chunk_overlap
        if overlap * 2 > size:
            # Each chunk must move the window on by at least half its size: with an overlap close
            # to the size, one document would become ~len(text) chunks, each embedded.
            raise InvalidInput(f"chunk_overlap ({overlap}) must be at most half of chunk_size ({size}).")
        return IngestCommand(
            tags=user_tags(tags),
            source_id=user_source_id(source_id),
            chunking=chunking,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            force=force,
            external_id=external_id,
            title=user_title(title),
            metadata=user_metadata(metadata),
            collections=names,
        )

    def _question(self, question: str) -> str:
        question = (question or "").strip()
        if not question:
            raise InvalidInput("The question must not be empty.")
        if len(question) > self.settings.max_question_chars:
            raise InvalidInput(
                f"The question is {len(question):,} characters long; the limit is "
                f"{self.settings.max_question_chars:,} (MAX_QUESTION_CHARS)."
            )
        return question

    def _top_k(self, top_k: int | None) -> int:
        top_k = self.settings.default_top_k if top_k is None else top_k
        if not 1 <= top_k <= self.settings.max_top_k:
            raise InvalidInput(f"top_k must be between 1 and {self.settings.max_top_k} (MAX_TOP_K); got {top_k}.")
        return top_k

"""What callers ask the services for, built and validated once against the settings.

Every entry point (HTTP, the OpenAI-compatible API, MCP, the CLI) turns its input into a
`SearchQuery` (an `AnswerQuery` wraps one) or `IngestCommand` through `RequestFactory`, so the limits
(MAX_QUESTION_CHARS, MAX_TOP_K, chunk overlap), the defaults (DEFAULT_TOP_K) and the normalisation of
tags and source filters are written once. The services take these types and trust them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.answers.modes import AnswerMode
from carrag.services.errors import InvalidInput
from carrag.services.models import DEFAULT_COLLECTION, ChatMessage, SearchFilters
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
    live_tokens: bool = True  # False: send the answer only once it is checked (OpenAI streams)

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


def split_tags(raw: str | None) -> list[str]:
    """Comma-separated tags (a form field, a CLI option) as a list, trimmed, empties dropped."""
    return [tag.strip() for tag in (raw or "").split(",") if tag.strip()]


def search_filters(tags: Iterable[str] | None = None, source: str | None = None) -> SearchFilters:
    """Only documents with any of ``tags``; only the source id (or glob) ``source``."""
    return SearchFilters(tags=tuple(normalise_tags(tags)), source=(source or "").strip() or None)


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
        principal: Principal = FULL_ACCESS,
        collection: str | None = None,
        collections: Iterable[str] | None = None,
    ) -> SearchQuery:
        """A validated search; 403 (Forbidden) when ``principal`` may not read a collection it searches."""
        names = collection_names(collection, collections)
        principal.check_read(names)  # each collection searched, before whether it exists (no probing)
        return SearchQuery(
            self._question(question),
            self._top_k(top_k),
            search_filters(tags, source),
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
            tags=normalise_tags(tags),
            source_id=(source_id or "").strip() or None,
            chunking=chunking,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            force=force,
            external_id=external_id,
            title=title,
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

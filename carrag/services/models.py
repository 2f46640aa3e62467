"""Plain data passed between the pipeline's stages. No behaviour lives here."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from carrag.services.errors import EmbeddingModelMismatch
from carrag.services.positions import Region, TextPositions
from carrag.services.vocabulary import HealthStatus

MetadataValue = str | int | float | bool


def metadata_value(value: MetadataValue) -> str:
    """A user metadata value as both stores index and filters compare it: JSON's spelling of
    numbers and booleans (``2024``, ``1.5``, ``true``), strings as they are. So ``year=2024``
    from the CLI matches ``{"year": 2024}`` from JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def metadata_pairs(metadata: dict[str, MetadataValue]) -> list[str]:
    """``key=value`` terms of user metadata (keys never contain ``=``), as indexed for filters."""
    return [f"{key}={metadata_value(value)}" for key, value in metadata.items()]


@dataclass(frozen=True, slots=True)
class PageSpan:
    """Where one PDF page's text sits inside the extracted document text."""

    page: int  # 1-based page number
    start: int
    end: int


@dataclass(slots=True)
class ParsedDocument:
    """The output of a parser: the extracted text plus what we know about where it came from."""

    text: str
    filename: str
    source_type: str
    metadata: dict[str, Any] = field(default_factory=dict)
    page_spans: list[PageSpan] = field(default_factory=list)
    title: str | None = None
    positions: TextPositions | None = None  # PDFs: where the text is drawn on its pages


@dataclass(slots=True)
class Chunk:
    """A piece of the extracted text: ``text == document_text[char_start:char_end]``, except that a chunk
    starting inside a Markdown table begins with that table's header and delimiter rows
    (`chunking/tables.py`), which are not part of its span."""

    chunk_index: int
    text: str
    char_start: int
    char_end: int
    pages: list[int] = field(default_factory=list)
    section: str | None = None  # header path, for markdown chunking
    regions: list[Region] = field(default_factory=list)  # PDFs: where its span is drawn on its pages


@dataclass(slots=True)
class DocumentRecord:
    document_id: str
    filename: str
    source_id: str
    source_type: str
    content_hash: str
    chunk_count: int
    tags: list[str]
    metadata: dict[str, Any]
    created_at: str  # ISO 8601, UTC
    title: str | None = None
    external_id: str | None = None
    # The user's own metadata (scalar values; ingest, PATCH): `metadata` above is what Carrag
    # recorded (parser, chunking), so replacing one never touches the other.
    user_metadata: dict[str, MetadataValue] = field(default_factory=dict)
    collection_id: str = "default"  # the collection (knowledge base) it belongs to
    # its name, filled by the services for display (`CollectionService.name_documents`); stores ignore it
    collection_name: str | None = field(default=None, compare=False)


@dataclass(slots=True)
class StoredChunk:
    """A chunk as read back from a store, with its document's descriptive fields."""

    document_id: str
    chunk_index: int
    text: str
    char_start: int
    char_end: int
    filename: str
    source_id: str
    tags: list[str]
    pages: list[int] = field(default_factory=list)
    section: str | None = None
    title: str | None = None
    external_id: str | None = None
    collection_id: str = "default"
    regions: list[Region] = field(default_factory=list)  # read by chunk listings only, not by searches

    @property
    def key(self) -> tuple[str, int]:
        return (self.document_id, self.chunk_index)


@dataclass(slots=True)
class ScoredChunk:
    chunk: StoredChunk
    score: float
    # Chunks within ``neighbour_radius`` of this one that the store read along with the hit (any order,
    # this one not included); None: not read, neighbour expansion asks the store (`Store.get_windows`).
    neighbour_radius: int | None = None
    neighbours: tuple[StoredChunk, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions both search legs honour. Empty means no restriction."""

    tags: tuple[str, ...] = ()  # a chunk matches when its document has ANY of these tags
    source: str | None = None  # exact source id, or a glob (`*`, `?`, `[...]`)
    document_ids: tuple[str, ...] = ()
    tag_prefixes: tuple[str, ...] = ()  # ... ANY tag starting with one of these
    metadata: tuple[tuple[str, str], ...] = ()  # (key, canonical value): ALL must match (`metadata_value`)
    source_types: tuple[str, ...] = ()  # ANY of these source types
    created_after: str | None = None  # ISO 8601, UTC (`created_at >= created_after`)
    created_before: str | None = None  # ISO 8601, UTC (`created_at < created_before`)
    filename_glob: str | None = None  # GLOB on the file name (case-sensitive)
    # the collections searched (ids); empty means every collection (the services always fill it)
    collection_ids: tuple[str, ...] = ()

    @property
    def source_is_glob(self) -> bool:
        return self.source is not None and any(ch in self.source for ch in "*?[")


DEFAULT_COLLECTION = "default"  # id and name of the collection that always exists


@dataclass(slots=True)
class Collection:
    """A knowledge base: a named set of documents. The id is stable; renaming changes only the name."""

    collection_id: str
    name: str
    created_at: str  # ISO 8601, UTC
    document_count: int = 0


@dataclass(frozen=True, slots=True)
class EmbeddingIdentity:
    """Which model produced a store's vectors: ``provider:model[:urlhash]`` plus dimension."""

    model: str
    dimension: int

    def describe(self) -> str:
        return f"{self.model} ({self.dimension}-d)"

    def accepts(self, incoming: EmbeddingIdentity) -> bool:
        """Whether a store holding vectors of this identity can take (or be queried with) vectors
        of ``incoming``. A store from before model tracking records no model; only its dimension
        binds then (the model is recorded on its next write)."""
        return self.dimension == incoming.dimension and self.model in ("", incoming.model)

    def check_accepts(self, incoming: EmbeddingIdentity) -> None:
        if not self.accepts(incoming):
            raise EmbeddingModelMismatch(self.describe(), incoming.describe())


def chunk_heading(title: str | None, section: str | None) -> str:
    """What a chunk is about beyond its own words: its document title and section path. Both
    stores index it beside the chunk text for BM25."""
    return " ".join(part for part in (title or "", section or "") if part)


@dataclass(slots=True)
class OriginalFile:
    """The bytes of a document as uploaded or fetched, kept beside it (KEEP_ORIGINALS)."""

    content: bytes
    content_type: str
    filename: str


@dataclass(slots=True)
class Original:
    """A kept original as read back: what it is, and its bytes in pieces (read as they are consumed,
    from one consistent snapshot: a download finishes even if the document is deleted meanwhile)."""

    document_id: str
    filename: str
    content_type: str
    size: int
    pieces: AsyncIterator[bytes]

    async def read(self) -> bytes:
        """All the bytes at once (tests, small files)."""
        return b"".join([piece async for piece in self.pieces])


@dataclass(slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(slots=True)
class ComponentHealth:
    name: str
    status: HealthStatus
    backend: str
    model: str | None = None
    detail: str | None = None

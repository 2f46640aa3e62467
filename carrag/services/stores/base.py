"""The store port: what every chunk store (SQLite, Elasticsearch) must do, and nothing more.

Search legs return raw ranked lists; fusion, reranking and expansion live above the store
(`carrag/services/retrieval/`) so every backend behaves the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from carrag.services.models import (
    DEFAULT_COLLECTION,
    Chunk,
    Collection,
    ComponentHealth,
    DocumentRecord,
    EmbeddingIdentity,
    MetadataValue,
    Original,
    OriginalFile,
    ScoredChunk,
    SearchFilters,
    StoredChunk,
)

DocumentSort = Literal["created_at", "filename", "chunk_count"]
SortOrder = Literal["asc", "desc"]


def is_glob(pattern: str) -> bool:
    """Whether a file-name filter is a glob (``*``, ``?``, ``[...]``) rather than a substring."""
    return any(char in pattern for char in "*?[")


@dataclass(slots=True)
class DocumentPage:
    items: list[DocumentRecord]
    total: int


@dataclass(slots=True)
class ChunkListing:
    chunk: StoredChunk
    vector_dimension: int


class VectorHits(list[ScoredChunk]):
    """The kNN leg's hits, best first, and ``model``: the embedding model of the vectors they were
    found among, when the store can tell (Elasticsearch: that of the index the hits came from; None
    otherwise, and when nothing was found). The query path compares it with the query's model."""

    def __init__(self, hits: Sequence[ScoredChunk] = (), model: EmbeddingIdentity | None = None) -> None:
        super().__init__(hits)
        self.model = model


def checked_vectors(chunks: Sequence[Chunk], vectors: np.ndarray, identity: EmbeddingIdentity) -> np.ndarray:
    """The vectors of a `write_document` call as a contiguous float32 matrix, one row per chunk of
    the identity's dimension; a mismatch is a programming error, not bad input."""
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or (len(chunks) and matrix.shape[1] != identity.dimension):
        raise ValueError(f"vectors of shape {matrix.shape} do not match dimension {identity.dimension}")
    return matrix


class Store(Protocol):
    backend: str  # "sqlite", "elasticsearch"

    async def open(self) -> None:
        """Create tables/indices if missing. Raises DependencyUnavailable when unreachable."""

    async def close(self) -> None: ...

    async def health(self) -> ComponentHealth: ...

    async def embedding_identity(self) -> EmbeddingIdentity | None:
        """The model the stored vectors came from, or None for an empty store."""

    async def query_identity(self) -> EmbeddingIdentity | None:
        """`embedding_identity` as a search needs it, possibly from memory (Elasticsearch: per
        concrete index); a kNN leg that finds vectors of another model says so (`VectorHits.model`)."""

    async def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        identity: EmbeddingIdentity,
        *,
        original: OriginalFile | None = None,
    ) -> str | None:
        """Store a document and its chunks atomically, replacing any document with the same
        ``source_id`` in the same step. Readers see the old version or the new one, never both
        or neither. Raises EmbeddingModelMismatch if the store holds vectors of another model.
        ``original`` (the uploaded bytes) is stored with the document, in the same step; the replaced
        version's original goes with it. Returns the replaced document's id, if any."""

    async def delete_document(self, document_id: str) -> bool: ...

    async def update_metadata(
        self,
        document_id: str,
        *,
        tags: list[str] | None = None,
        title: str | None = None,
        user_metadata: dict[str, MetadataValue] | None = None,
    ) -> DocumentRecord | None:
        """Replace the tags, set the title and/or replace the user metadata (None leaves a field as
        it is) of a document and of its chunks, in place: same id, same vectors, no new version.
        The system metadata (`DocumentRecord.metadata`) is never changed. None if there is no such
        document."""

    async def wipe(self) -> None:
        """Remove every document, chunk and the recorded embedding identity."""

    async def get_document(self, document_id: str) -> DocumentRecord | None: ...

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        """The document of ``source_id`` in the collection (a source id is unique per collection)."""

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        """A document of the collection whose ``content_hash`` is exactly this one (the newest when several are)."""

    async def list_documents(
        self,
        *,
        offset: int,
        limit: int,
        tag: str | None = None,
        collection_ids: Sequence[str] = (),
        sort: DocumentSort = "created_at",
        order: SortOrder = "desc",
        filename: str | None = None,
    ) -> DocumentPage:
        """A page of documents in ``sort`` order (ties by document id), only the given collections (ids)
        unless empty; ``filename`` (lower case) keeps those whose file name contains it, or matches it
        whole when it is a glob (`is_glob`)."""

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        """Documents a user's ``reference`` may name, at most ``limit`` (``total`` counts them all):
        its id (or an id starting with it), its source id, or its file name (the last path segment of
        its source id, case-sensitive). Exact id matches come first, then exact source id matches, then
        the rest, newest first. Only the given collections (ids) unless empty."""

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        """(source_id, source_type) of every document (of the given collections unless empty)."""

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]: ...

    async def count_chunks(self) -> int: ...

    async def check_integrity(self) -> list[str]:
        """Readable descriptions of anything inconsistent (chunk counts, orphans, missing vectors,
        lexical index out of step); empty when the store is consistent."""

    async def lexical_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        """The BM25 leg: best ``k`` chunks for the words of ``query``, best first."""

    async def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> VectorHits:
        """The kNN leg: ``k`` chunks nearest to ``vector`` by cosine, best first."""

    async def get_windows(self, centres: Sequence[tuple[str, int]], radius: int) -> list[StoredChunk]:
        """All chunks with ``chunk_index`` within ``radius`` of each (document_id, chunk_index)
        centre, in one batched call, each chunk once."""

    # --- collections (knowledge bases) -----------------------------------------------------------
    async def create_collection(self, collection: Collection) -> Collection:
        """Register a collection. Raises Conflict when its name (or id) is taken."""

    async def list_collections(self) -> list[Collection]:
        """Every collection, ``default`` included (it always exists), with its document count."""

    async def rename_collection(self, collection_id: str, name: str) -> Collection | None:
        """Give a collection a new name (documents and chunks keep its id, nothing is rewritten).
        Raises Conflict when the name is taken; None if there is no such collection."""

    async def delete_collection(self, collection_id: str) -> bool:
        """Remove every document and chunk of the collection, then its registry row. False if there
        was no such collection (its leftover documents, if any, are still removed)."""

    # --- originals (issue 14 item 4) -------------------------------------------------------------
    async def put_original(self, document_id: str, content: bytes, content_type: str, filename: str) -> bool:
        """Keep (or replace) the original bytes of an existing document; False if there is no such
        document (nothing is stored then). Deleting or replacing the document deletes them."""

    async def get_original(self, document_id: str) -> Original | None:
        """The kept original of a live document, or None (no such document, or none kept)."""

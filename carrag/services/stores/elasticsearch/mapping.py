"""What the index holds, by ``doc_kind``: ``chunk`` (the document's descriptive fields copied in, and its
neighbours within ``STORED_NEIGHBOURS``, not indexed, so a hit carries its window), ``version`` (one per
written version), ``document`` (the *source record*, one per collection and ``source_id``, naming the
live version; `versions.py` flips it) and ``collection``. Records from before collections carry no
``collection_id`` and belong to ``default``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from carrag.services.ids import chunk_id
from carrag.services.models import DEFAULT_COLLECTION, Chunk, DocumentRecord, StoredChunk, chunk_heading, metadata_pairs
from carrag.services.positions import decode_regions, encode_regions

SCHEMA_VERSION = 3
HNSW_OPTIONS = {"type": "hnsw", "m": 16, "ef_construction": 100}

# The mappings of the index, of the originals' index and of the jobs' index (fields: docs/architecture.md)
MAPPINGS: dict[str, Any] = json.loads(Path(__file__).with_name("mappings.json").read_text(encoding="utf-8"))
BASE_PROPERTIES: dict[str, Any] = MAPPINGS["index"]
STORED_NEIGHBOURS = 1  # chunks on each side stored in each chunk
CHUNK_SOURCE_EXCLUDES = ["embedding", "neighbours"]  # a chunk read as itself
SEARCH_SOURCE_EXCLUDES = ["embedding", "regions"]  # a chunk read by a search leg: with its neighbours


def index_mappings() -> dict[str, Any]:
    return {"dynamic": "strict", "_meta": {"carrag_schema": SCHEMA_VERSION}, "properties": BASE_PROPERTIES}


def embedding_property(dimension: int) -> dict[str, Any]:
    return {
        "type": "dense_vector",
        "dims": dimension,
        "index": True,
        "similarity": "cosine",
        "index_options": HNSW_OPTIONS,
    }


def source_key(collection_id: str, source_id: str) -> str:
    """What a source record stands for: a source id within a collection. In ``default`` it is the
    source id itself, so the records of an index from before collections keep their ids."""
    return source_id if collection_id == DEFAULT_COLLECTION else f"{collection_id}\x00{source_id}"


def record_key(source: dict[str, Any]) -> str:
    """The source key of any record's or chunk's JSON (``collection_id`` absent: ``default``)."""
    return source_key(source.get("collection_id") or DEFAULT_COLLECTION, source["source_id"])


def document_key(document: DocumentRecord) -> str:
    return source_key(document.collection_id, document.source_id)


def source_record_id(key: str) -> str:
    """The id of a source's record (``key`` from `source_key`); hashed, since a source id may be
    longer than an ``_id`` may be."""
    return "source-" + hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).hexdigest()


def collection_record_id(name: str) -> str:
    return f"collection-{name}"


def collection_clause(collection_ids: Any) -> dict[str, Any]:
    """Only records of these collections; ``default`` also takes records that carry no collection."""
    ids = list(collection_ids)
    if DEFAULT_COLLECTION not in ids:
        return {"terms": {"collection_id": ids}}
    return {
        "bool": {
            "should": [
                {"terms": {"collection_id": ids}},
                {"bool": {"must_not": {"exists": {"field": "collection_id"}}}},
            ],
            "minimum_should_match": 1,
        }
    }


def source_records_query(collection_ids: Sequence[str], *clauses: dict[str, Any]) -> dict[str, Any]:
    """The source records (live documents) of these collections (all when empty) matching ``clauses``."""
    in_collections = [collection_clause(collection_ids)] if collection_ids else []
    return {"bool": {"filter": [{"term": {"doc_kind": "document"}}, *in_collections, *clauses]}}


def version_record_id(document_id: str) -> str:
    return f"version-{document_id}"


def version_ids(document_id: str, chunk_count: int) -> list[str]:
    """Every id a version occupies: its chunks, then its version record."""
    return [chunk_id(document_id, index) for index in range(chunk_count)] + [version_record_id(document_id)]


def _document_fields(document: DocumentRecord) -> dict[str, Any]:
    """What source records and chunks both hold of a document."""
    return {
        "document_id": document.document_id,
        "source_id": document.source_id,
        "source_type": document.source_type,
        "filename": document.filename,
        "title": document.title,
        "external_id": document.external_id,
        "tags": list(document.tags),
        "created_at": document.created_at,
        "metadata_pairs": metadata_pairs(document.user_metadata),
        "collection_id": document.collection_id,
    }


def source_record(document: DocumentRecord, chunk_count: int) -> dict[str, Any]:
    return {
        **_document_fields(document),
        "doc_kind": "document",
        "filename_lower": document.filename.lower(),
        "content_hash": document.content_hash,
        "chunk_count": chunk_count,
        # the same JSON round trip as the SQLite store: anything unusual becomes its str()
        "metadata": json.loads(json.dumps(document.metadata, default=str)),
        "user_metadata": dict(document.user_metadata),
    }


def version_record(document: DocumentRecord, chunk_count: int, written_at: str) -> dict[str, Any]:
    return {
        "doc_kind": "version",
        "document_id": document.document_id,
        "source_id": document.source_id,
        "chunk_count": chunk_count,
        "written_at": written_at,
        "collection_id": document.collection_id,
    }


def _chunk_fields(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_index": chunk.chunk_index,
        "content": chunk.text,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "pages": list(chunk.pages),
        "section": chunk.section,
    }


def chunk_source(
    document: DocumentRecord, chunk: Chunk, vector: np.ndarray, neighbours: Sequence[Chunk] = ()
) -> dict[str, Any]:
    """A chunk's JSON; ``neighbours``: its version's chunks within ``STORED_NEIGHBOURS`` (`neighbours_of`)."""
    source = {
        **_chunk_fields(chunk),
        **_document_fields(document),
        "doc_kind": "chunk",
        "heading": chunk_heading(document.title, chunk.section),
        "embedding": vector.tolist(),
        "neighbours": {"radius": STORED_NEIGHBOURS, "chunks": [_chunk_fields(n) for n in neighbours]},
    }
    if chunk.regions:
        source["regions"] = encode_regions(chunk.regions)
    return source


def neighbours_of(chunks: Sequence[Chunk], chunk: Chunk) -> list[Chunk]:
    """The chunks of ``chunks`` (one version's) within ``STORED_NEIGHBOURS`` of ``chunk``, itself left out."""
    centre = chunk.chunk_index
    in_order = 0 <= centre < len(chunks) and chunks[centre].chunk_index == centre  # the usual 0..n-1
    nearby = chunks[max(centre - STORED_NEIGHBOURS, 0) : centre + STORED_NEIGHBOURS + 1] if in_order else chunks
    return sorted(
        (other for other in nearby if 0 < abs(other.chunk_index - centre) <= STORED_NEIGHBOURS),
        key=lambda other: other.chunk_index,
    )


def stored_neighbours(source: dict[str, Any]) -> tuple[StoredChunk, ...] | None:
    """The neighbours a chunk's JSON stores (None: written before the field); ``regions`` is the chunk's own."""
    stored = source.get("neighbours")
    if stored is None:
        return None
    return tuple(to_chunk({**source, "regions": None, **entry}) for entry in stored["chunks"])


def to_chunk(source: dict[str, Any]) -> StoredChunk:
    return StoredChunk(
        document_id=source["document_id"],
        chunk_index=source["chunk_index"],
        text=source["content"],
        char_start=source["char_start"],
        char_end=source["char_end"],
        filename=source["filename"],
        source_id=source["source_id"],
        tags=list(source.get("tags") or []),
        pages=list(source.get("pages") or []),
        section=source.get("section"),
        title=source.get("title"),
        external_id=source.get("external_id"),
        collection_id=source.get("collection_id") or DEFAULT_COLLECTION,
        regions=decode_regions(source.get("regions")),
    )


def to_document(source: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        document_id=source["document_id"],
        filename=source["filename"],
        source_id=source["source_id"],
        source_type=source["source_type"],
        content_hash=source["content_hash"],
        chunk_count=source["chunk_count"],
        tags=list(source.get("tags") or []),
        metadata=source.get("metadata") or {},
        created_at=source["created_at"],
        title=source.get("title"),
        external_id=source.get("external_id"),
        user_metadata=source.get("user_metadata") or {},
        collection_id=source.get("collection_id") or DEFAULT_COLLECTION,
    )

"""What the Elasticsearch index holds: its mapping and the JSON of each kind of document in it.

Five kinds of documents share one index (``doc_kind``):

- ``chunk``: one per chunk of a version: ``content`` (``english`` analyzer, BM25), ``embedding``
  (``dense_vector``, HNSW, cosine) and the document's descriptive fields copied in, so a hit needs
  no second lookup. Id: ``chunk_id(document_id, chunk_index)``. Since schema 3 it also stores its
  *neighbours* (not indexed): the chunk fields of the chunks of the same version within
  ``STORED_NEIGHBOURS`` on each side, so a search hit carries its expansion window (`windows.py`).
  A version's chunks never change, so these are exactly what a window read of the version returns;
  chunks written before (no ``neighbours``) are expanded by reading their windows.
- ``version``: one per written version (``document_id``): which source it belongs to, how many
  chunks it has and when it was written. Id: ``version-<document_id>``. It lets a version be
  found by id in real time, and abandoned versions be found and removed.
- ``document``: the *source record*, one per (collection, ``source_id``), holding the ``DocumentRecord``
  of the source's live version. Id: ``source-<sha256(source key)>`` (`source_key`). Flipping it from
  one version to the next is what makes a version visible (`versions.py`).
- ``collection``: one per collection name (`collections.py`), id ``collection-<name>``, holding the
  collection's stable id. The ``default`` collection has none: it always exists.
- ``epoch``: one document, id ``epoch``, whose random value (in ``content_hash``) changes
  whenever a version stops being live (`versions.py`), so readers can tell nothing was retired.

Every kind carries ``collection_id``; a document written before collections has none and belongs to
``default`` (`collection_clause`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from carrag.services.models import DEFAULT_COLLECTION, Chunk, DocumentRecord, StoredChunk, chunk_heading, metadata_pairs
from carrag.services.positions import decode_regions, encode_regions

SCHEMA_VERSION = 3  # 3: chunks store their neighbours
HNSW_OPTIONS = {"type": "hnsw", "m": 16, "ef_construction": 100}

_STORED_ONLY = {"type": "keyword", "index": False, "doc_values": False}
BASE_PROPERTIES: dict[str, Any] = {
    "doc_kind": {"type": "keyword"},
    "document_id": {"type": "keyword"},
    "source_id": {"type": "keyword"},
    "source_type": {"type": "keyword"},
    "filename_lower": {"type": "keyword"},  # the file name in lower case: sorting and filtering by name
    # stored as it was; the `glob` sub-field (added later, so indexed for documents written or
    # reindexed since) is what file name filters match
    "filename": {**_STORED_ONLY, "fields": {"glob": {"type": "keyword"}}},
    "title": _STORED_ONLY,
    "external_id": {"type": "keyword"},
    "content_hash": {"type": "keyword"},
    "chunk_count": {"type": "integer"},
    "tags": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
    "content": {"type": "text", "analyzer": "english"},
    "heading": {"type": "text", "analyzer": "english"},
    "chunk_index": {"type": "integer"},
    "char_start": {"type": "integer"},
    "char_end": {"type": "integer"},
    "pages": {"type": "integer"},
    "section": _STORED_ONLY,
    "metadata": {"type": "object", "enabled": False},
    "created_at": {"type": "date_nanos"},
    "written_at": {"type": "date"},  # version records: when the version's chunks were written
    "user_metadata": {"type": "object", "enabled": False},  # source records: the user's own metadata
    "metadata_pairs": {"type": "keyword"},  # chunks and source records: `key=value` of the user metadata
    "collection_id": {"type": "keyword"},
    "collection_name": {"type": "keyword"},  # collection records
    # chunks: {"radius": r, "chunks": [chunk fields of each chunk within r of it]} (`chunk_source`);
    # added to older indices when opened (`layout.py`), like any field above
    "neighbours": {"type": "object", "enabled": False},
    # chunks of PDFs: where the chunk is drawn on its pages, [[page, start, end, x0, y0, x1, y1], ...]
    # (`positions.encode_regions`); read by chunk listings, left out of search hits
    "regions": {"type": "object", "enabled": False},
}
STORED_NEIGHBOURS = 1  # chunks on each side stored in each chunk (`chunk_source`)
# a chunk read as itself: no vector, no stored neighbours
CHUNK_SOURCE_EXCLUDES = ["embedding", "neighbours"]
# a chunk read by a search leg: with its stored neighbours, for expansion (`windows.py`)
SEARCH_SOURCE_EXCLUDES = ["embedding", "regions"]


def index_settings(shards: int, replicas: int, refresh_interval: str) -> dict[str, Any]:
    return {"number_of_shards": shards, "number_of_replicas": replicas, "refresh_interval": refresh_interval}


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


# --- ids -------------------------------------------------------------------------------------------
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


EPOCH_ID = "epoch"


def epoch_record(value: str) -> dict[str, Any]:
    """The epoch document (`versions.py`): rewritten with a new random ``value`` whenever a
    version stops being live, before any of its chunks is deleted."""
    return {"doc_kind": "epoch", "content_hash": value}


def collection_record_id(name: str) -> str:
    return f"collection-{name}"


def collection_clause(collection_ids: Any, *, legacy: bool = True) -> dict[str, Any]:
    """Only records of these collections; ``default`` also takes records that carry no collection
    (unless ``legacy`` is False: the caller knows there are none, `IndexLayout.legacy_chunks`)."""
    ids = list(collection_ids)
    if DEFAULT_COLLECTION not in ids or not legacy:
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


def version_record_id(document_id: str) -> str:
    return f"version-{document_id}"


# --- documents -----------------------------------------------------------------------------------
def source_record(document: DocumentRecord, chunk_count: int) -> dict[str, Any]:
    return {
        "doc_kind": "document",
        "document_id": document.document_id,
        "source_id": document.source_id,
        "source_type": document.source_type,
        "filename": document.filename,
        "filename_lower": document.filename.lower(),
        "title": document.title,
        "external_id": document.external_id,
        "content_hash": document.content_hash,
        "chunk_count": chunk_count,
        "tags": list(document.tags),
        # the same JSON round trip as the SQLite store: anything unusual becomes its str()
        "metadata": json.loads(json.dumps(document.metadata, default=str)),
        "created_at": document.created_at,
        "user_metadata": dict(document.user_metadata),
        "metadata_pairs": metadata_pairs(document.user_metadata),
        "collection_id": document.collection_id,
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


def neighbours_of(chunks: Sequence[Chunk], chunk: Chunk, radius: int = STORED_NEIGHBOURS) -> list[Chunk]:
    """The chunks of ``chunks`` (one version's) within ``radius`` of ``chunk`` by chunk index, itself
    left out: what a window read of the version would return around it."""
    centre = chunk.chunk_index
    if 0 <= centre < len(chunks) and chunks[centre].chunk_index == centre:  # the usual 0..n-1 order
        nearby: Sequence[Chunk] = chunks[max(centre - radius, 0) : centre + radius + 1]
    else:
        nearby = chunks
    return sorted(
        (other for other in nearby if other.chunk_index != centre and abs(other.chunk_index - centre) <= radius),
        key=lambda other: other.chunk_index,
    )


def _neighbour_entry(chunk: Chunk) -> dict[str, Any]:
    """A stored neighbour: the chunk fields of `to_chunk`; the document fields are the hit's own."""
    return {
        "chunk_index": chunk.chunk_index,
        "content": chunk.text,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "pages": list(chunk.pages),
        "section": chunk.section,
    }


def chunk_source(
    document: DocumentRecord, chunk: Chunk, vector: np.ndarray, neighbours: Sequence[Chunk] | None = None
) -> dict[str, Any]:
    """A chunk's JSON; ``neighbours`` (`neighbours_of`, within ``STORED_NEIGHBOURS``) stored with it,
    unless None (then none are stored and its window is read when needed)."""
    source: dict[str, Any] = {
        "doc_kind": "chunk",
        "document_id": document.document_id,
        "source_id": document.source_id,
        "source_type": document.source_type,
        "filename": document.filename,
        "title": document.title,
        "external_id": document.external_id,
        "tags": list(document.tags),
        "content": chunk.text,
        "heading": chunk_heading(document.title, chunk.section),
        "chunk_index": chunk.chunk_index,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "pages": list(chunk.pages),
        "section": chunk.section,
        "embedding": vector.tolist(),
        "created_at": document.created_at,
        "metadata_pairs": metadata_pairs(document.user_metadata),
        "collection_id": document.collection_id,
    }
    if neighbours is not None:
        source["neighbours"] = {"radius": STORED_NEIGHBOURS, "chunks": [_neighbour_entry(n) for n in neighbours]}
    if chunk.regions:
        source["regions"] = encode_regions(chunk.regions)
    return source


def stores_neighbours(source: dict[str, Any], radius: int) -> bool:
    """Whether a chunk's JSON stores its neighbours at least ``radius`` on each side."""
    stored = source.get("neighbours")
    return isinstance(stored, dict) and stored.get("radius", 0) >= radius


def stored_neighbours(
    source: dict[str, Any], radius: int, chunk: StoredChunk | None = None
) -> list[StoredChunk] | None:
    """The neighbours within ``radius`` that a chunk's JSON stores, equal to what `to_chunk` reads
    from the neighbours themselves (document fields from the chunk, ``chunk`` if already read,
    chunk fields from each entry); None when it stores none, or fewer than ``radius`` on each side."""
    if not stores_neighbours(source, radius):
        return None
    return neighbour_chunks(source, radius, chunk)


def neighbour_chunks(source: dict[str, Any], radius: int, chunk: StoredChunk | None = None) -> list[StoredChunk]:
    """`stored_neighbours` of a chunk's JSON known to store them (`stores_neighbours`)."""
    own = chunk if chunk is not None else to_chunk(source)
    centre = own.chunk_index
    return [
        dataclasses.replace(
            own,
            chunk_index=entry["chunk_index"],
            text=entry["content"],
            char_start=entry["char_start"],
            char_end=entry["char_end"],
            tags=list(own.tags),
            pages=list(entry.get("pages") or []),
            section=entry.get("section"),
            regions=[],  # not stored with neighbours
        )
        for entry in source["neighbours"].get("chunks") or []
        if abs(entry["chunk_index"] - centre) <= radius
    ]


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

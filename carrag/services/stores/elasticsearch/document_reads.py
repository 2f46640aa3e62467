"""Reading documents (source records) and a document's chunks: look-ups, listings, counts. Source
records are the live versions (`versions.py`), so these need no live filter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from carrag.services.models import (
    DEFAULT_COLLECTION,
    DocumentRecord,
)
from carrag.services.stores.base import ChunkListing, DocumentPage, DocumentSort, SortOrder, is_glob
from carrag.services.stores.elasticsearch import queries
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    collection_clause,
    source_key,
    to_chunk,
    to_document,
)
from carrag.services.stores.elasticsearch.reads import IndexReads
from carrag.services.stores.elasticsearch.versions import Versions


class DocumentReads:
    def __init__(self, reads: IndexReads, versions: Versions) -> None:
        self.reads = reads
        self.versions = versions

    async def get_document(self, document_id: str) -> DocumentRecord | None:
        return await self.reads.guarded("looking up a document", lambda: self.versions.live_document(document_id), None)

    async def find_by_source(self, source_id: str, collection_id: str = DEFAULT_COLLECTION) -> DocumentRecord | None:
        key = source_key(collection_id, source_id)
        state = await self.reads.guarded("looking up a document", lambda: self.versions.source_state(key), None)
        return state.document if state is not None else None

    async def find_by_content_hash(
        self, content_hash: str, collection_id: str = DEFAULT_COLLECTION
    ) -> DocumentRecord | None:
        """The newest live document of the collection with exactly this ``content_hash`` (a keyword field)."""
        response = await self.reads.search(
            "looking up a document",
            query={
                "bool": {
                    "filter": [
                        {"term": {"doc_kind": "document"}},
                        {"term": {"content_hash": content_hash}},
                        collection_clause([collection_id]),
                    ]
                }
            },
            sort=[{"created_at": "desc"}, {"document_id": "asc"}],
            size=1,
        )
        hits = response["hits"]["hits"]
        return to_document(hits[0]["_source"]) if hits else None

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
        """Sorting and filtering by file name use ``filename_lower``, which source records written
        before it existed lack (`carrag reindex` rewrites them): they sort last and match no filter."""
        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if tag is not None:
            filters.append({"term": {"tags.keyword": tag}})
        if collection_ids:
            filters.append(collection_clause(collection_ids))
        if filename is not None:
            filters.append(queries.filename_clause(filename.lower(), is_glob(filename)))
        field = "filename_lower" if sort == "filename" else sort
        hits, total = await self.reads.walk(
            "listing documents",
            {"bool": {"filter": filters}},
            [{field: {"order": order, "missing": "_last"}}, {"document_id": "asc"}],
            offset=offset,
            limit=limit,
        )
        return DocumentPage([to_document(hit["_source"]) for hit in hits], total)

    async def find_documents(self, reference: str, *, limit: int, collection_ids: Sequence[str] = ()) -> DocumentPage:
        def ranked(query: dict[str, Any], boost: float) -> dict[str, Any]:
            return {"constant_score": {"filter": query, "boost": boost}}

        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if collection_ids:
            filters.append(collection_clause(collection_ids))
        query = {
            "bool": {
                "filter": filters,
                "should": [
                    ranked({"term": {"document_id": reference}}, 100),
                    ranked({"term": {"source_id": reference}}, 10),
                    ranked({"prefix": {"document_id": reference}}, 1),
                    ranked({"wildcard": {"source_id": {"value": "*/" + _escape_wildcard(reference)}}}, 1),
                ],
                "minimum_should_match": 1,
            }
        }
        hits, total = await self.reads.walk(
            "finding documents",
            query,
            ["_score", {"created_at": "desc"}, {"document_id": "asc"}],
            offset=0,
            limit=limit,
        )
        return DocumentPage([to_document(hit["_source"]) for hit in hits], total)

    async def list_sources(self, collection_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "document"}}]
        if collection_ids:
            filters.append(collection_clause(collection_ids))
        hits, _ = await self.reads.walk(
            "listing sources",
            {"bool": {"filter": filters}},
            [{"source_id": "asc"}],
            source_includes=["source_id", "source_type"],
        )
        return [(hit["_source"]["source_id"], hit["_source"]["source_type"]) for hit in hits]

    async def get_chunks(self, document_id: str, *, offset: int = 0, limit: int = 1000) -> list[ChunkListing]:
        if await self.get_document(document_id) is None:
            return []
        hits, _ = await self.reads.walk(
            "listing a document's chunks",
            {"bool": {"filter": [{"term": {"doc_kind": "chunk"}}, {"term": {"document_id": document_id}}]}},
            [{"chunk_index": "asc"}],
            offset=offset,
            limit=limit,
            source_excludes=CHUNK_SOURCE_EXCLUDES,
        )
        if not hits:
            return []
        identity = await self.reads.guarded("reading the embedding model", self.reads.layout.stored_identity, None)
        dimension = identity.dimension if identity else 0  # every vector has the mapping's dims
        return [ChunkListing(to_chunk(hit["_source"]), dimension) for hit in hits]

    async def count_chunks(self) -> int:
        """The chunks of live versions: the sum of the source records' chunk counts."""
        response = await self.reads.search(
            "counting chunks",
            query={"term": {"doc_kind": "document"}},
            size=0,
            aggregations={"chunks": {"sum": {"field": "chunk_count"}}},
        )
        return int((response.get("aggregations") or {}).get("chunks", {}).get("value") or 0)


def _escape_wildcard(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")

"""Reading and deleting stored documents: what the document routes, the admin reset, the MCP tools
and the CLI share."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from carrag.services.access import FULL_ACCESS, Principal, can_read_collection_id, readable_collection_ids
from carrag.services.collections import CollectionService
from carrag.services.errors import NotFound
from carrag.services.models import DEFAULT_COLLECTION, DocumentRecord, Original
from carrag.services.requests import user_metadata, user_tags, user_title
from carrag.services.stores.base import ChunkListing, DocumentSort, SortOrder, Store

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class DocumentList:
    items: list[DocumentRecord]
    total: int
    offset: int
    limit: int


@dataclass(slots=True)
class ChunkList:
    document_id: str
    items: list[ChunkListing]
    total: int  # the document's chunk count
    offset: int
    limit: int


@dataclass(slots=True)
class DeletedDocument:
    document_id: str
    deleted: bool = True


@dataclass(slots=True)
class DeletedSource:
    source_id: str
    documents: list[DocumentRecord]  # what was deleted

    @property
    def deleted(self) -> int:
        return len(self.documents)


@dataclass(slots=True)
class StoreReset:
    documents_deleted: int
    reset: bool = True


class DocumentService:
    def __init__(self, store: Store, collections: CollectionService | None = None) -> None:
        self.store = store
        self.collections = collections or CollectionService(store)

    async def get(self, document_id: str, principal: Principal = FULL_ACCESS) -> DocumentRecord:
        """The document, or NotFound (404): also when it is in a collection ``principal`` may not read."""
        record = await self.store.get_document(document_id)
        if record is None or not await can_read_collection_id(principal, self.collections, record.collection_id):
            raise NotFound(f"No document with id {document_id}.")
        await self.collections.name_documents([record])
        return record

    async def page(
        self,
        *,
        offset: int = 0,
        limit: int = 50,
        tag: str | None = None,
        sort: DocumentSort = "created_at",
        order: SortOrder = "desc",
        filename: str | None = None,
        collections: list[str] | None = None,
        principal: Principal = FULL_ACCESS,
    ) -> DocumentList:
        """A page of documents, newest first unless ``sort``/``order`` say otherwise; ``tag`` matches
        case-insensitively, ``filename`` is a case-insensitive substring or glob (``*.pdf``). ``collections``
        (names; unknown → NotFound, outside ``principal``'s scope → Forbidden) restricts it; none: every
        collection ``principal`` may read."""
        collection_ids = await self._listed_collection_ids(collections, principal)
        if collection_ids == ():
            return DocumentList([], 0, offset, limit)
        page = await self.store.list_documents(
            offset=offset,
            limit=limit,
            tag=tag.strip().lower() if tag else None,
            collection_ids=collection_ids or (),
            sort=sort,
            order=order,
            filename=filename.strip() or None if filename else None,
        )
        await self.collections.name_documents(page.items)
        return DocumentList(page.items, page.total, offset, limit)

    async def find(
        self,
        reference: str,
        *,
        limit: int = 10,
        collections: list[str] | None = None,
        principal: Principal = FULL_ACCESS,
    ) -> DocumentList:
        """The documents a user's reference names (`carrag documents show <ref>`, ``GET /documents?ref=``):
        an exact id names one document; else an exact source id names its documents (one per collection);
        else every document whose id starts with it or whose file name (last segment of the source id) it
        is. ``collections`` (names; unknown → NotFound, outside ``principal``'s scope → Forbidden) restricts
        it; none: every collection ``principal`` may read (a document elsewhere is never named). One item
        means the reference is unambiguous; several are the candidates to choose from."""
        reference = reference.strip()
        collection_ids = await self._listed_collection_ids(collections, principal)
        if collection_ids == ():
            return DocumentList([], 0, 0, limit)
        page = await self.store.find_documents(reference, limit=limit, collection_ids=collection_ids or ())
        await self.collections.name_documents(page.items)
        exact_id = [record for record in page.items if record.document_id == reference]
        if exact_id:
            return DocumentList(exact_id, 1, 0, limit)
        exact_source = [record for record in page.items if record.source_id == reference]
        if exact_source:
            return DocumentList(exact_source, len(exact_source), 0, limit)
        return DocumentList(page.items, page.total, 0, limit)

    async def chunks(
        self, document_id: str, *, offset: int = 0, limit: int = 100, principal: Principal = FULL_ACCESS
    ) -> ChunkList:
        """A document's chunks in order, or NotFound (404)."""
        record = await self.get(document_id, principal)
        listings = await self.store.get_chunks(document_id, offset=offset, limit=limit)
        return ChunkList(document_id, listings, record.chunk_count, offset, limit)

    async def original(self, document_id: str, principal: Principal = FULL_ACCESS) -> Original:
        """The document's kept original bytes, or NotFound (404) saying whether the document (also one
        ``principal`` may not read) or only its original is missing."""
        await self.get(document_id, principal)  # 404: no such document, or not for this key
        original = await self.store.get_original(document_id)
        if original is not None:
            return original
        await self.get(document_id, principal)  # replaced or deleted meanwhile: say so
        raise NotFound(
            f"Document {document_id} has no kept original: it was ingested as text, before originals "
            "were kept, or with KEEP_ORIGINALS=false."
        )

    async def update_metadata(
        self,
        document_id: str,
        *,
        tags: list[str] | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        principal: Principal = FULL_ACCESS,
    ) -> DocumentRecord:
        """Replace a document's tags, set its title and/or replace its user metadata, in place (same
        id, no re-embedding), or NotFound (404). Tags, title and metadata are checked as at ingest; None leaves a field as it is. The system metadata is never touched."""
        await self._check_change(document_id, principal)
        record = await self.store.update_metadata(
            document_id,
            tags=user_tags(tags) if tags is not None else None,
            title=user_title(title),
            user_metadata=user_metadata(metadata) if metadata is not None else None,
        )
        if record is None:
            raise NotFound(f"No document with id {document_id}.")
        logger.info("document metadata updated", extra={"document_id": document_id})
        await self.collections.name_documents([record])
        return record

    async def delete(self, document_id: str, principal: Principal = FULL_ACCESS) -> DeletedDocument:
        """Delete a document and all its chunks, or NotFound (404)."""
        await self._check_change(document_id, principal)
        if not await self.store.delete_document(document_id):
            raise NotFound(f"No document with id {document_id}.")
        return DeletedDocument(document_id)

    async def delete_by_source(
        self, source_id: str, collections: Sequence[str] | None = None, principal: Principal = FULL_ACCESS
    ) -> DeletedSource:
        """Delete the document stored under ``source_id`` (exact) in each of the collections (names;
        none: ``default``; an unknown one is NotFound), or NotFound (404) when there is none. 403
        when ``principal`` may not write to one of the collections."""
        names = list(collections or [DEFAULT_COLLECTION])
        for name in names:
            principal.check_write(name)
        source_id = source_id.strip()
        deleted: list[DocumentRecord] = []
        for collection in await self.collections.resolve(names):
            record = await self.store.find_by_source(source_id, collection.collection_id) if source_id else None
            if record is not None and await self.store.delete_document(record.document_id):
                deleted.append(record)
        await self.collections.name_documents(deleted)
        if not deleted:
            raise NotFound(f"No document with source id {source_id!r}.")
        logger.info("documents deleted by source id", extra={"source_id": source_id, "documents": len(deleted)})
        return DeletedSource(source_id, deleted)

    async def _check_change(self, document_id: str, principal: Principal) -> None:
        """NotFound (404) for a document ``principal`` may not see, Forbidden (403) for one it may only read."""
        if principal.full_access:
            return
        await self.get(document_id, principal)
        principal.check_change()  # the collection is readable, so writable unless the key is read-only

    async def reset(self, principal: Principal = FULL_ACCESS) -> StoreReset:
        """Delete every document and chunk and forget the embedding model the store was built with
        (after a change of embedding model: `carrag reset`, POST /admin/reset)."""
        principal.check_full_access("Resetting the store")
        documents = (await self.store.list_documents(offset=0, limit=1)).total
        await self.store.wipe()
        logger.warning("store reset: every document deleted", extra={"documents": documents})
        return StoreReset(documents_deleted=documents)

    async def sources(
        self, collections: list[str] | None = None, *, principal: Principal = FULL_ACCESS
    ) -> list[tuple[str, str]]:
        """(source_id, source_type) of every document (of these collections, by name, if given; only
        of collections ``principal`` may read), sorted."""
        collection_ids = await self._listed_collection_ids(collections, principal)
        if collection_ids == ():
            return []
        return sorted(await self.store.list_sources(collection_ids or ()))

    async def _listed_collection_ids(self, names: list[str] | None, principal: Principal) -> tuple[str, ...] | None:
        """The collection ids a listing is restricted to: the named collections (Forbidden when one is
        outside ``principal``'s scope, NotFound when one does not exist), else every collection
        ``principal`` may read. None: no restriction; empty: nothing to list (never "no filter")."""
        if names:
            principal.check_read(names)
            return tuple(c.collection_id for c in await self.collections.resolve(names))
        return await readable_collection_ids(principal, self.collections)

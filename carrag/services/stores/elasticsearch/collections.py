"""The collection registry: one ``collection`` record per name, its id derived from the name, so of
processes creating one only one wins. A rename creates the new name's record, then deletes the old one
conditionally (changed meanwhile: the new record is removed and the rename retried). A delete removes
the record, then every live document of the collection; a write racing it may leave a document under
the removed id, which no search reaches and a second delete removes. ``default`` has no record."""

from __future__ import annotations

from typing import Any

from elasticsearch import ConflictError

from carrag.services.errors import Conflict, DependencyUnavailable
from carrag.services.models import DEFAULT_COLLECTION, Collection
from carrag.services.stores.elasticsearch.connection import PAGE
from carrag.services.stores.elasticsearch.mapping import collection_record_id, source_records_query
from carrag.services.stores.elasticsearch.versions import FLIP_ATTEMPTS, Versions

MAX_COLLECTIONS = 10_000


def default_collection(document_count: int = 0) -> Collection:
    """``default`` has no record (it always exists), so no creation time of its own."""
    return Collection(DEFAULT_COLLECTION, DEFAULT_COLLECTION, "1970-01-01T00:00:00+00:00", document_count)


def _from_record(source: dict[str, Any], count: int = 0) -> Collection:
    return Collection(source["collection_id"], source["collection_name"], source["created_at"], count)


class CollectionRegistry:
    def __init__(self, versions: Versions) -> None:
        self.versions = versions
        self.connection = versions.connection
        self.alias = versions.alias

    async def create(self, collection: Collection) -> Collection:
        with self.connection.errors("creating a collection", self.alias):
            try:
                await self.connection.writer.create(
                    index=self.alias,
                    id=collection_record_id(collection.name),
                    document={
                        "doc_kind": "collection",
                        "collection_id": collection.collection_id,
                        "collection_name": collection.name,
                        "created_at": collection.created_at,
                    },
                    refresh=self.versions.refresh,
                    require_alias=self.versions.require_alias,
                )
            except ConflictError as exc:
                raise Conflict(f"collection {collection.name!r} already exists") from exc
        return Collection(collection.collection_id, collection.name, collection.created_at, 0)

    async def _records(self, collection_id: str | None = None) -> list[dict[str, Any]]:
        """Collection records (with their concurrency tokens), by name."""
        filters: list[dict[str, Any]] = [{"term": {"doc_kind": "collection"}}]
        if collection_id is not None:
            filters.append({"term": {"collection_id": collection_id}})
        with self.connection.errors("listing collections", self.alias):
            response = await self.connection.client.search(
                index=self.alias,
                query={"bool": {"filter": filters}},
                sort=[{"collection_name": "asc"}],
                size=MAX_COLLECTIONS,
                seq_no_primary_term=True,
            )
        return response["hits"]["hits"]

    async def document_counts(self) -> dict[str, int]:
        with self.connection.errors("counting documents per collection", self.alias):
            response = await self.connection.client.search(
                index=self.alias,
                query={"term": {"doc_kind": "document"}},
                size=0,
                aggregations={
                    "collections": {
                        "terms": {"field": "collection_id", "missing": DEFAULT_COLLECTION, "size": MAX_COLLECTIONS}
                    }
                },
            )
        buckets = (response.get("aggregations") or {}).get("collections", {}).get("buckets", [])
        return {bucket["key"]: int(bucket["doc_count"]) for bucket in buckets}

    async def list(self) -> list[Collection]:
        counts = await self.document_counts()
        found: dict[str, Collection] = {}
        for hit in await self._records():
            collection = _from_record(hit["_source"], counts.get(hit["_source"]["collection_id"], 0))
            found.setdefault(collection.collection_id, collection)  # mid-rename: both names, shown once
        return sorted([default_collection(counts.get(DEFAULT_COLLECTION, 0)), *found.values()], key=lambda c: c.name)

    async def rename(self, collection_id: str, name: str) -> Collection | None:
        for _ in range(FLIP_ATTEMPTS):
            records = await self._records(collection_id)
            if not records:
                return None
            current = records[0]
            if current["_source"]["collection_name"] == name:
                return _from_record(current["_source"])
            renamed = _from_record({**current["_source"], "collection_name": name})
            await self.create(renamed)  # Conflict when the new name is taken
            if await self._delete_record(current):
                renamed.document_count = (await self.document_counts()).get(collection_id, 0)
                return renamed
            # the old record changed meanwhile: undo, look again
            undo = self.connection.writer.delete(
                index=self.alias, id=collection_record_id(name), refresh=self.versions.refresh
            )
            await self.connection.conditionally("changing a collection", self.alias, undo)
        raise DependencyUnavailable("store", "the collection kept changing while it was being renamed; retry")

    async def _delete_record(self, hit: dict[str, Any]) -> bool:
        delete = self.connection.writer.delete(
            index=self.alias,
            id=hit["_id"],
            if_seq_no=hit["_seq_no"],
            if_primary_term=hit["_primary_term"],
            refresh=self.versions.refresh,
        )
        return await self.connection.conditionally("changing a collection", self.alias, delete) is not None

    async def delete(self, collection_id: str) -> bool:
        """Unregister the collection, then delete its documents; False if it was not registered."""
        existed = False
        for _ in range(FLIP_ATTEMPTS):
            records = await self._records(collection_id)
            if not records:
                break
            for hit in records:
                existed = await self._delete_record(hit) or existed
        else:
            raise DependencyUnavailable("store", "the collection kept changing while it was being deleted; retry")
        await self.delete_documents(collection_id)
        return existed

    async def delete_documents(self, collection_id: str) -> None:
        """Delete every live document of the collection (each through `Versions.delete`)."""
        idle = 0
        while idle < FLIP_ATTEMPTS:
            with self.connection.errors("deleting a collection's documents", self.alias):
                response = await self.connection.client.search(
                    index=self.alias,
                    query=source_records_query([collection_id]),
                    size=PAGE,
                    source_includes=["document_id"],
                )
            hits = response["hits"]["hits"]
            if not hits:
                return
            deleted = [await self.versions.delete(hit["_source"]["document_id"]) for hit in hits]
            if not any(deleted):  # the search still lists records deleted by others: let it catch up
                idle += 1
                await self.connection.client.indices.refresh(index=self.alias)
        raise DependencyUnavailable("store", "the collection's documents kept changing while it was deleted; retry")

    async def copy_to(self, index: str) -> None:
        """Write every collection record into ``index`` (a new generation, `carrag reindex`)."""
        for hit in await self._records():
            with self.connection.errors("copying collections", index):
                await self.connection.writer.index(index=index, id=hit["_id"], document=hit["_source"])

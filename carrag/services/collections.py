"""Collections: create, list, rename, delete, and resolving the names callers give. ``default`` always
exists and can be neither renamed nor deleted; documents carry the collection's stable id, so a rename
rewrites nothing.
"""

from __future__ import annotations

import builtins
import logging
import re
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.errors import Conflict, InvalidInput, NotFound
from carrag.services.models import DEFAULT_COLLECTION, Collection, DocumentRecord
from carrag.services.stores.base import Store

logger = logging.getLogger(__name__)

# How long `resolve` trusts the registry it read (it is read on every search and ingest otherwise).
# This process's own changes take effect at once; another replica's rename or delete within this long.
RESOLVE_CACHE_SECONDS = 2.0

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)


def valid_name(name: str) -> str:
    """The name if it is one a collection may have (1–64 characters ``[a-z0-9][a-z0-9_-]*``), else InvalidInput."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInput(
            f"invalid collection name {name!r}: 1-64 characters, lower-case letters, digits, '-' and '_', "
            "starting with a letter or digit"
        )
    return name


def missing(name: str) -> NotFound:
    return NotFound(f"collection {name!r} does not exist")


class CollectionService:
    def __init__(self, store: Store, *, cache_seconds: float = RESOLVE_CACHE_SECONDS) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._cached: tuple[float, dict[str, Collection]] | None = None  # (read at, name → collection)

    def forget(self) -> None:
        """Read the registry again at the next `resolve` (after a change)."""
        self._cached = None

    async def _by_name(self) -> dict[str, Collection]:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < self.cache_seconds:
            return self._cached[1]
        by_name = {collection.name: collection for collection in await self.store.list_collections()}
        self._cached = (now, by_name)
        return by_name

    async def list(self, principal: Principal = FULL_ACCESS) -> builtins.list[Collection]:
        """Every collection (``principal`` may read), ``default`` included, by name."""
        return [c for c in await self.store.list_collections() if principal.can_read(c.name)]

    async def get(self, name: str, principal: Principal = FULL_ACCESS) -> Collection:
        principal.check_read([name])
        return (await self.resolve([name]))[0]

    async def create(self, name: str, principal: Principal = FULL_ACCESS) -> Collection:
        """A new, empty collection; Conflict (409) when the name is taken."""
        principal.check_full_access("Creating a collection")
        name = valid_name(name)
        if name == DEFAULT_COLLECTION:
            raise Conflict(f"collection {name!r} already exists")
        collection = Collection(uuid.uuid4().hex, name, datetime.now(UTC).isoformat())
        created = await self.store.create_collection(collection)
        self.forget()
        logger.info("collection created", extra={"collection": name, "collection_id": created.collection_id})
        return created

    async def rename(self, name: str, new_name: str, principal: Principal = FULL_ACCESS) -> Collection:
        """Give a collection another name; its documents keep their ids and vectors."""
        principal.check_full_access("Renaming a collection")
        new_name = valid_name(new_name)
        collection = await self.get(name)
        if collection.collection_id == DEFAULT_COLLECTION:
            raise Conflict("the default collection cannot be renamed")
        if new_name == collection.name:
            return collection
        if new_name == DEFAULT_COLLECTION:
            raise Conflict(f"collection {new_name!r} already exists")
        renamed = await self.store.rename_collection(collection.collection_id, new_name)
        self.forget()
        if renamed is None:
            raise missing(name)
        logger.info("collection renamed", extra={"collection": name, "new_name": new_name})
        return renamed

    async def delete(self, name: str, principal: Principal = FULL_ACCESS) -> Collection:
        """Delete a collection with every document and chunk in it; returns what it was."""
        principal.check_full_access("Deleting a collection")
        collection = await self.get(name)
        if collection.collection_id == DEFAULT_COLLECTION:
            raise Conflict("the default collection cannot be deleted")
        deleted = await self.store.delete_collection(collection.collection_id)
        self.forget()
        if not deleted:
            raise missing(name)
        logger.warning("collection deleted", extra={"collection": name, "documents": collection.document_count})
        return collection

    async def resolve(self, names: Iterable[str] | None) -> builtins.list[Collection]:
        """The collections of these names, in the order given (no names: ``default``); NotFound (404)
        naming the first unknown one."""
        wanted = list(dict.fromkeys(names or [])) or [DEFAULT_COLLECTION]
        by_name = await self._by_name()
        if any(name not in by_name for name in wanted):
            self.forget()  # created by another process a moment ago?
            by_name = await self._by_name()
        for name in wanted:
            if name not in by_name:
                raise missing(name)
        return [by_name[name] for name in wanted]

    async def names_by_id(self) -> dict[str, str]:
        """``collection_id → name`` of every collection (to show names on documents and hits)."""
        return {collection.collection_id: collection.name for collection in (await self._by_name()).values()}

    async def name_documents(self, documents: Iterable[DocumentRecord]) -> None:
        """Fill each document's ``collection_name`` (what the API shows) from its ``collection_id``."""
        documents = list(documents)
        if not documents:
            return
        names = await self.names_by_id()
        for document in documents:
            document.collection_name = names.get(document.collection_id, document.collection_id)

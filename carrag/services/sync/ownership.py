"""Which documents a sync owns, recorded in their user metadata under ``sync.*`` (kept by both stores,
updated in place, filterable). A sync deletes only documents whose ``sync.root`` is its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from carrag.services.models import DocumentRecord, MetadataValue
from carrag.services.stores.base import Store

ROOT = "sync.root"  # the folder (symlinks resolved) or crawl scope that made the document
SIZE = "sync.size"  # a file's size and modification time (ns) when it was last read: unchanged → not read again
MTIME = "sync.mtime_ns"
SHA256 = "sync.sha256"  # of the file's bytes: a file touched but not changed is not parsed again
ETAG = "sync.etag"  # a page's validators, sent back as If-None-Match / If-Modified-Since
LAST_MODIFIED = "sync.last_modified"
PAGE = 1000  # documents listed per store call


@dataclass(slots=True)
class Holdings:
    """The collection's documents as a sync sees them."""

    owned: dict[str, DocumentRecord] = field(default_factory=dict)  # source id → the document it made
    others: set[str] = field(default_factory=set)  # source ids held by documents it did not make


async def holdings(store: Store, collection_id: str, root: str) -> Holdings:
    """Every document of the collection, sorted into this root's and the others' (oldest first, so
    documents written meanwhile land on later pages rather than shifting the ones to come)."""
    held = Holdings()
    offset = 0
    while True:
        page = await store.list_documents(
            offset=offset, limit=PAGE, collection_ids=[collection_id], sort="created_at", order="asc"
        )
        for document in page.items:
            if document.user_metadata.get(ROOT) == root:
                held.owned[document.source_id] = document
            else:
                held.others.add(document.source_id)
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return held


def sync_metadata(
    existing: DocumentRecord | None,
    requested: Mapping[str, MetadataValue],
    recorded: Mapping[str, MetadataValue | None],
) -> dict[str, MetadataValue]:
    """The user metadata of a source's new version: what its document had (metadata added since is kept),
    the request's, then this sync's bookkeeping (``None`` values left out)."""
    kept = dict(existing.user_metadata) if existing is not None else {}
    return {**kept, **requested, **{key: value for key, value in recorded.items() if value is not None}}

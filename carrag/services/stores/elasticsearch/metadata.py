"""A live document's tags, title and user metadata changed in place, without a new version: partial
updates of its chunks by id, then its source record rewritten conditionally, as a flip is
(`versions.py`); a record naming another version by then means the document is gone."""

from __future__ import annotations

import dataclasses
from typing import Any

from carrag.services.ids import chunk_id
from carrag.services.models import DocumentRecord, MetadataValue, chunk_heading, metadata_pairs
from carrag.services.stores.elasticsearch.connection import Operation, bulk_failure
from carrag.services.stores.elasticsearch.mapping import document_key
from carrag.services.stores.elasticsearch.versions import Versions


async def update_metadata(
    versions: Versions,
    document_id: str,
    *,
    tags: list[str] | None,
    title: str | None,
    user_metadata: dict[str, MetadataValue] | None = None,
) -> DocumentRecord | None:
    """Set the live ``document_id``'s tags, title and/or user metadata (None leaves a field as it
    is) on its chunks and its source record. None if the document is not live."""
    current = await versions.live_document(document_id)
    if current is None:
        return None
    await _update_chunks(versions, current, tags=tags, title=title, user_metadata=user_metadata)

    def updated(document: DocumentRecord) -> DocumentRecord:
        return dataclasses.replace(
            document,
            tags=list(tags) if tags is not None else document.tags,
            title=title if title is not None else document.title,
            user_metadata=dict(user_metadata) if user_metadata is not None else document.user_metadata,
        )

    state = await versions.change_record(document_key(current), document_id, "updating a document", updated)
    return updated(state.document) if state is not None else None


async def _update_chunks(
    versions: Versions,
    document: DocumentRecord,
    *,
    tags: list[str] | None,
    title: str | None,
    user_metadata: dict[str, MetadataValue] | None,
) -> None:
    """Partial updates of every chunk of the version; a new title changes each ``heading``, so the
    sections are read first (no scripts: they need the painless module, which a node may lack)."""
    changes: dict[str, Any] = {}
    if tags is not None:
        changes["tags"] = list(tags)
    if title is not None:
        changes["title"] = title
    if user_metadata is not None:
        changes["metadata_pairs"] = metadata_pairs(user_metadata)
    if not changes:
        return
    ids = [chunk_id(document.document_id, index) for index in range(document.chunk_count)]
    sections: dict[str, str | None] = {}
    if title is not None:
        action = "reading a document's chunks"
        found = await versions.connection.found(action, versions.alias, ids=ids, source_includes=["section"])
        sections = {doc["_id"]: doc["_source"].get("section") for doc in found}
    operations: list[Operation] = []
    for doc_id in ids:
        fields = dict(changes)
        if title is not None:
            fields["heading"] = chunk_heading(title, sections.get(doc_id))
        operations.append(({"update": {"_id": doc_id}}, {"doc": fields}))
    failed = [result for result in await versions.bulk(operations, f"updating {document.filename}") if not result.ok]
    if failed:
        raise bulk_failure(failed, len(ids), f"updating {document.filename}", "; retry the update")

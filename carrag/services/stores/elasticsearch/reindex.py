"""`carrag reindex`: re-embed every live document into the next index generation and move the alias to it,
readers undisturbed. Create ``<alias>-<n+1>`` and record the new model in it; copy each source record's
chunks, embedded again, through the visibility protocol; block writes to the old index and copy again
what changed meanwhile; swap the alias in one ``_aliases`` request; delete the old index (unless
``keep_old``). A failure before the swap deletes the new index and lifts the block."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from carrag.services.embedders.service import EmbeddingService
from carrag.services.ingestion import embedding_input
from carrag.services.models import Chunk, DocumentRecord, ParsedDocument
from carrag.services.stores.elasticsearch.connection import every_hit
from carrag.services.stores.elasticsearch.layout import generation_name, generation_of
from carrag.services.stores.elasticsearch.mapping import CHUNK_SOURCE_EXCLUDES, document_key, to_chunk, to_document
from carrag.services.stores.elasticsearch.store import ElasticsearchStore
from carrag.services.stores.elasticsearch.versions import PendingWrite, Versions

Report = Callable[[str], None]
Progress = Callable[[int, int], None]  # documents copied, documents to copy


@dataclass(slots=True)
class ReindexResult:
    old_index: str
    new_index: str
    documents: int
    chunks: int
    caught_up: int
    old_deleted: bool


async def reindex(
    store: ElasticsearchStore,
    embedder: EmbeddingService,
    *,
    keep_old: bool = False,
    report: Report = print,
    progress: Progress | None = None,
) -> ReindexResult:
    client = store.client
    layout = store.layout
    alias = store.index
    concrete = await layout.concrete_indices()
    plain = not concrete and bool(await client.indices.exists(index=alias))
    if not concrete and not plain:
        await store.open()
        concrete = await layout.concrete_indices()
    old = concrete[0] if concrete else alias
    generation = generation_of(alias, old) + 1  # a plain index counts as generation 0
    new = generation_name(alias, generation)
    await layout.create_generation(generation, with_alias=False)
    identity = await embedder.embedding_identity()
    await layout.claim_identity(identity, new)
    target = Versions(store.connection, new, refresh="false", require_alias=False)
    report(f"re-embedding {old} into {new} with {identity.describe()}")
    await store.collections.copy_to(new)
    try:
        copied: dict[str, tuple[str, int]] = {}  # source key → (live version, record's _seq_no) as copied
        chunks = await _copy_sources(store, old, target, embedder, identity, copied, False, report, progress)
        report(f"copied {len(copied)} documents ({chunks} chunks); blocking writes to {old} to catch up")
        await client.indices.add_block(index=old, block="write")
        changed = await _copy_sources(store, old, target, embedder, identity, copied, True, report)
        removed = await _remove_deleted(store, old, new, target)
        await client.indices.refresh(index=new)
        remove = {"remove_index": {"index": old}} if plain else {"remove": {"index": old, "alias": alias}}
        await client.indices.update_aliases(
            actions=[remove, {"add": {"index": new, "alias": alias, "is_write_index": True}}]
        )
    except BaseException:
        await client.indices.delete(index=new, ignore_unavailable=True)
        await client.indices.put_settings(index=old, settings={"index.blocks.write": False})
        raise
    report(f"alias {alias} now points to {new}")
    store.served_identity.forget()
    deleted = plain
    if not keep_old and not plain:
        await client.indices.delete(index=old)
        deleted = True
    return ReindexResult(old, new, len(copied), chunks, changed + removed, deleted)


async def _source_records(store: ElasticsearchStore, index: str) -> list[tuple[DocumentRecord, int]]:
    """Every source record of ``index`` (refreshed state) with its sequence number."""
    await store.client.indices.refresh(index=index)
    pages = every_hit(
        store.client,
        index,
        query={"term": {"doc_kind": "document"}},
        sort=[{"source_id": "asc"}],
        seq_no_primary_term=True,
    )
    return [(to_document(hit["_source"]), hit["_seq_no"]) async for hit in pages]


async def _copy_sources(
    store: ElasticsearchStore,
    old: str,
    target: Versions,
    embedder: EmbeddingService,
    identity: Any,
    copied: dict[str, tuple[str, int]],
    catch_up: bool,
    report: Report,
    progress: Progress | None = None,
) -> int:
    """Copy (re-embedding) each source record of ``old`` into ``copied``; in the catch-up only those whose
    record changed since it was copied: another version, or new metadata (the record's ``_seq_no``)."""
    total = 0
    records = await _source_records(store, old)
    for record, seq_no in records:
        if catch_up and copied.get(document_key(record)) == (record.document_id, seq_no):
            continue
        hits = await store.client.search(
            index=old,
            query={
                "bool": {"filter": [{"term": {"doc_kind": "chunk"}}, {"term": {"document_id": record.document_id}}]}
            },
            sort=[{"chunk_index": "asc"}],
            size=max(record.chunk_count, 1),
            source_excludes=CHUNK_SOURCE_EXCLUDES,
        )
        stored = [to_chunk(hit["_source"]) for hit in hits["hits"]["hits"]]
        chunks = [Chunk(c.chunk_index, c.text, c.char_start, c.char_end, c.pages, c.section, c.regions) for c in stored]
        parsed = ParsedDocument(text="", filename=record.filename, source_type=record.source_type, title=record.title)
        vectors = (
            await embedder.embed_documents([embedding_input(chunk, parsed) for chunk in chunks])
            if chunks
            else np.zeros((0, identity.dimension), dtype=np.float32)
        )
        outcome = (await target.write([PendingWrite(record, chunks, vectors, identity)]))[0]
        if isinstance(outcome, BaseException):
            raise outcome
        copied[document_key(record)] = (record.document_id, seq_no)
        total += len(chunks)
        if progress:
            progress(len(copied), len(records))
        if len(copied) % 100 == 0:
            report(f"… {len(copied)} documents")
    return total


async def _remove_deleted(store: ElasticsearchStore, old: str, new: str, target: Versions) -> int:
    """Delete from ``new`` the sources that no longer exist in ``old``."""
    present = {document_key(record) for record, _ in await _source_records(store, old)}
    removed = 0
    for record, _ in await _source_records(store, new):
        if document_key(record) not in present and await target.delete(record.document_id):
            removed += 1
    return removed

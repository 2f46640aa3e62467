"""The ingestion pipeline: parse → auto-tag → chunk → embed → store. Nothing reaches the store until every
chunk has a vector; the store then writes the document in one atomic step, so a failure or cancel at any
stage leaves no partial document.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from carrag.services.admission import AdmissionGate
from carrag.services.chunking import chunk_document, default_strategy
from carrag.services.collections import CollectionService
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import CarragError, DependencyUnavailable, InvalidInput
from carrag.services.fetchers.base import FetchedPage, Fetcher
from carrag.services.ids import content_hash, new_document_id
from carrag.services.ingest_bulk import BulkDocument, DocumentEmbedder, ingest_together
from carrag.services.ingest_reading import parse_upload, read_page, read_url, text_document
from carrag.services.model_change import ModelChange, PendingChangeWrite
from carrag.services.models import (
    DEFAULT_COLLECTION,
    Chunk,
    Collection,
    DocumentRecord,
    EmbeddingIdentity,
    OriginalFile,
    ParsedDocument,
)
from carrag.services.originals import uploaded_original
from carrag.services.parsers.budget import ParseBudget
from carrag.services.parsers.pdf_ocr import reader_for
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.stores.base import Store
from carrag.services.tagging import Tagger, auto_tags, merge_tags
from carrag.services.telemetry import NullTelemetry, Telemetry
from carrag.services.timing import elapsed_ms
from carrag.services.vocabulary import ChunkingStrategy, IngestStatus, JobState

logger = logging.getLogger(__name__)


class IngestObserver(Protocol):
    """Receives progress; the jobs room and the CLI implement it."""

    def stage(self, stage: JobState) -> None: ...

    def embedded(self, done: int, total: int) -> None: ...

    def ocr_read(self, done: int, total: int) -> None: ...  # pages read by OCR (as each starts), while parsing


class _SilentObserver:
    def stage(self, stage: JobState) -> None:
        pass

    def embedded(self, done: int, total: int) -> None:
        pass

    def ocr_read(self, done: int, total: int) -> None:
        pass


@dataclass(slots=True)
class IngestResult:
    document_id: str
    filename: str
    chunk_count: int
    tags: list[str]
    status: IngestStatus
    source_id: str  # for a duplicate: the source id that already holds this content
    replaced_document_id: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    collection: str = DEFAULT_COLLECTION  # the name of the collection it went into


def embedding_input(chunk: Chunk, document: ParsedDocument) -> str:
    """The text embedded for a chunk: the document title and the chunk's section path (when known
    and not already at the start of the chunk), each on its own line, then the chunk itself.

    A chunk alone often does not say what it is about ("Replace it every two years."); its heading
    does. On SciFact this lifted the kNN leg's nDCG@10 (docs/benchmarks.md). Only the embedding
    sees the heading: the stored chunk text, and so citations, are unchanged.
    """
    context = [
        part.strip()
        for part in dict.fromkeys((document.title, chunk.section))
        if part and part.strip() and not chunk.text.startswith(part.strip())
    ]
    return "\n".join([*context, chunk.text])


def default_chunking(parsed: ParsedDocument, settings: Settings) -> ChunkingStrategy:
    """The strategy for a request that names none: by headers for Markdown and HTML (their parsers mark
    them ``metadata.markup = "markdown"``), else the format's own (`chunking.default_strategy`, e.g.
    ``code`` for source files), else CHUNKING_STRATEGY."""
    if settings.markdown_chunking_for_markup and parsed.metadata.get("markup") == "markdown":
        return ChunkingStrategy.MARKDOWN
    return default_strategy(parsed, settings.chunking_strategy)


class IngestionService:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: EmbeddingService,
        tagger: Tagger,
        fetcher: Fetcher,
        telemetry: Telemetry | None = None,
        collections: CollectionService | None = None,
        model_change: ModelChange | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.model_change = model_change  # while the store holds another model's vectors (model_change.py)
        self.collections = collections or CollectionService(store)
        self.embedder = embedder
        self.tagger = tagger
        self.fetcher = fetcher
        # None: OCR off or not installed
        self.ocr = reader_for(settings.ocr_enabled, settings.ocr_dpi, ParseBudget.from_settings(settings))
        self.admission = AdmissionGate(settings.max_concurrent_ingests, settings.ingest_queue_size, "ingestion")
        self.accepting = True  # False once shutdown has begun (stop_accepting)
        self.telemetry = telemetry or NullTelemetry()

    # --- admission -------------------------------------------------------------------------------
    def stop_accepting(self) -> None:
        """Shutdown has begun: ingests that have not got a slot yet are refused with 503."""
        self.accepting = False

    def check_accepting(self) -> None:
        """503 once shutdown has begun (`JobManager` asks before queueing a job, too)."""
        if not self.accepting:
            raise DependencyUnavailable(
                "ingestion", "the service is shutting down and accepts no new ingests; retry after it restarts."
            )

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """At most MAX_CONCURRENT_INGESTS run; up to INGEST_QUEUE_SIZE wait; beyond that, 429.
        During shutdown, 503."""
        self.check_accepting()
        async with self.admission.admit():
            self.check_accepting()  # shutdown may have begun while this one waited
            yield

    # --- entry points --------------------------------------------------------------------------
    # Each entry point waits for an ingestion slot first (`slot`): 429 when the queue is full.
    async def ingest_file(
        self, data: bytes, filename: str, options: IngestCommand, observer: IngestObserver | None = None
    ) -> IngestResult:
        async with self.slot():
            observer = observer or _SilentObserver()
            timings: dict[str, float] = {}
            observer.stage(JobState.PARSING)
            parsed = await parse_upload(data, filename, self.settings, self.ocr, timings, observer.ocr_read)
            return await self._ingest_parsed(parsed, options, observer, timings, original=self._kept(data, filename))

    async def ingest_url(
        self, url: str, options: IngestCommand, observer: IngestObserver | None = None
    ) -> IngestResult:
        async with self.slot():
            observer = observer or _SilentObserver()
            timings: dict[str, float] = {}
            observer.stage(JobState.PARSING)
            parsed, original = await read_url(url, self.fetcher, self.settings, self.ocr, timings, observer.ocr_read)
            return await self._ingest_parsed(parsed, options, observer, timings, original=original)

    async def ingest_page(
        self, page: FetchedPage, options: IngestCommand, observer: IngestObserver | None = None
    ) -> IngestResult:
        """A page fetched already (a crawl reads its links and validators first)."""
        async with self.slot():
            observer = observer or _SilentObserver()
            timings: dict[str, float] = {}
            observer.stage(JobState.PARSING)
            parsed, original = await read_page(page, self.settings, self.ocr, timings, observer.ocr_read)
            return await self._ingest_parsed(parsed, options, observer, timings, original=original)

    async def ingest_text(
        self, text: str, filename: str, options: IngestCommand, observer: IngestObserver | None = None
    ) -> IngestResult:
        """Already-extracted text (evaluation datasets, programmatic use)."""
        async with self.slot():
            return await self._ingest_parsed(
                text_document(text, filename, options.title), options, observer or _SilentObserver(), {}
            )

    async def ingest_many(
        self,
        documents: Iterable[BulkDocument],
        *,
        concurrency: int = 256,
        on_result: Callable[[int, IngestResult | CarragError], None] | None = None,
    ) -> list[IngestResult | CarragError]:
        """Ingest many documents, embedding their chunks together in large batches (`ingest_bulk.py`).
        A document that fails gets its error in the result list (input order); the others go on."""
        return await ingest_together(
            documents,
            self._ingest_bulk_item,
            self.embedder,
            texts_per_call=self.settings.embed_batch_size * 16,
            concurrency=concurrency,
            on_result=on_result,
        )

    async def _ingest_bulk_item(self, item: BulkDocument, embed: DocumentEmbedder) -> IngestResult:
        timings: dict[str, float] = {}
        original = None
        if item.data is not None:
            parsed = await parse_upload(item.data, item.filename, self.settings, self.ocr, timings)
            original = self._kept(item.data, item.filename)
        else:
            parsed = text_document(item.text or "", item.filename, item.options.title)
        return await self._ingest_parsed(parsed, item.options, _SilentObserver(), timings, embed, original=original)

    def _kept(self, data: bytes, filename: str) -> OriginalFile | None:
        """An upload's bytes as its kept original, when KEEP_ORIGINALS."""
        return uploaded_original(data, filename) if self.settings.keep_originals else None

    # --- the shared pipeline -------------------------------------------------------------------
    async def _ingest_parsed(
        self,
        parsed: ParsedDocument,
        options: IngestCommand,
        observer: IngestObserver,
        timings: dict[str, float],
        embed: DocumentEmbedder | None = None,
        *,
        original: OriginalFile | None = None,
    ) -> IngestResult:
        settings = self.settings
        if len(parsed.text) > settings.max_extracted_chars:
            raise InvalidInput(
                f"{parsed.filename} yields {len(parsed.text):,} characters of text; the limit is "
                f"{settings.max_extracted_chars:,} (MAX_EXTRACTED_CHARS)."
            )
        if options.title and not parsed.title:
            parsed.title = options.title
        source_id = options.source_id or parsed.filename
        digest = content_hash(parsed.text)
        user_tags = merge_tags([], options.tags)

        collection = (await self.collections.resolve([options.collection]))[0]  # unknown: NotFound (404)
        stored = await self._already_stored(source_id, digest, collection, user_tags, options, timings)
        if stored is not None:
            return stored
        identity, pending_change = await self._check_embedding_identity()

        observer.stage(JobState.TAGGING)
        started = time.perf_counter()
        generated = await auto_tags(self.tagger, parsed.text[: settings.tagging_content_chars], parsed.filename)
        tags = merge_tags(generated, user_tags)
        timings["tag"] = elapsed_ms(started)

        observer.stage(JobState.CHUNKING)
        started = time.perf_counter()
        chunks, chunking = await self._chunk(parsed, options)
        timings["chunk"] = elapsed_ms(started)

        observer.stage(JobState.EMBEDDING)
        started = time.perf_counter()
        texts = [embedding_input(chunk, parsed) for chunk in chunks]
        if pending_change is not None:  # both models' vectors (`model_change.py`); no coalescing
            twice = await pending_change.embed(texts, progress=observer.embedded)
        else:
            vectors = await (embed or self.embedder.embed_documents)(texts, progress=observer.embedded)
        timings["embed"] = elapsed_ms(started)

        observer.stage(JobState.INDEXING)
        started = time.perf_counter()
        record = _document_record(parsed, options, source_id, digest, len(chunks), tags, chunking, collection)
        # the original (when kept) is written with the document, in the same atomic step
        if pending_change is not None:
            replaced = await pending_change.write(record, chunks, twice, original)
        else:
            replaced = await self.store.write_document(record, chunks, vectors, identity, original=original)
        timings["index"] = elapsed_ms(started)
        self.telemetry.chunks_indexed(len(chunks))
        self._report(IngestStatus.INGESTED, timings)
        observer.stage(JobState.DONE)
        logger.info(
            "document ingested",
            extra={
                "document_id": record.document_id,
                "source_id": source_id,
                "chunks": len(chunks),
                "replaced": replaced,
                "timings_ms": timings,
            },
        )
        return IngestResult(
            document_id=record.document_id,
            filename=record.filename,
            chunk_count=len(chunks),
            tags=tags,
            status=IngestStatus.INGESTED,
            source_id=source_id,
            replaced_document_id=replaced,
            timings_ms=timings,
            collection=collection.name,
        )

    async def _already_stored(
        self,
        source_id: str,
        digest: str,
        collection: Collection,
        user_tags: list[str],
        options: IngestCommand,
        timings: dict[str, float],
    ) -> IngestResult | None:
        """The result when this content is stored already, so nothing is embedded: unchanged (or updated
        with the request's tags and metadata) under the same source, or a duplicate of another source
        (unless ALLOW_DUPLICATES or ``force``). None: go on and ingest."""
        existing = await self.store.find_by_source(source_id, collection.collection_id)
        if existing is not None and existing.content_hash == digest and not options.force:
            status = IngestStatus.UNCHANGED
            updated = await self._add_metadata(existing, user_tags, options.metadata)
            if updated is not None:
                existing, status = updated, IngestStatus.UPDATED
            self._report(status, timings)
            return _stored_result(existing, status, source_id, timings, collection)
        if self.settings.allow_duplicates:
            return None
        twin = await self.store.find_by_content_hash(digest, collection.collection_id)
        if twin is None or twin.source_id == source_id:
            return None
        logger.info(
            "duplicate content; nothing stored",
            extra={"source_id": source_id, "duplicate_of": twin.source_id, "document_id": twin.document_id},
        )
        # the upload's tags and metadata still reach the content: added to the document holding it
        twin = await self._add_metadata(twin, user_tags, options.metadata) or twin
        return _stored_result(twin, IngestStatus.DUPLICATE, twin.source_id, timings, collection)

    async def _chunk(self, parsed: ParsedDocument, options: IngestCommand) -> tuple[list[Chunk], dict[str, Any]]:
        """The document's chunks, and how they were cut (recorded in the document's metadata)."""
        settings = self.settings
        strategy = options.chunking or default_chunking(parsed, settings)
        size = options.chunk_size or settings.chunk_size
        overlap = settings.chunk_overlap if options.chunk_overlap is None else options.chunk_overlap
        split_size = size
        if options.chunk_size is None and len(parsed.text) <= settings.whole_document_chars:
            split_size = max(size, len(parsed.text))  # a short document stays one chunk
        chunks = await asyncio.to_thread(chunk_document, parsed, strategy, split_size, overlap, settings.min_chunk_size)
        if not chunks:
            raise InvalidInput(f"{parsed.filename} contains no extractable text.")
        return chunks, {"strategy": strategy, "chunk_size": size, "chunk_overlap": overlap}

    def _report(self, status: str, timings: dict[str, float]) -> None:
        self.telemetry.document_ingested(status)
        self.telemetry.stages("ingest", timings)

    async def _add_metadata(
        self, document: DocumentRecord, tags: list[str], metadata: dict[str, Any]
    ) -> DocumentRecord | None:
        """Add ``tags`` and ``metadata`` to a stored document in place (nothing re-embedded); the updated
        record, or None when they add nothing (or the document went away meanwhile)."""
        merged = merge_tags(document.tags, tags)
        combined = {**document.user_metadata, **metadata}
        if merged == document.tags and combined == document.user_metadata:
            return None
        return await self.store.update_metadata(
            document.document_id,
            tags=merged if merged != document.tags else None,
            user_metadata=combined if combined != document.user_metadata else None,
        )

    async def _check_embedding_identity(self) -> tuple[EmbeddingIdentity, PendingChangeWrite | None]:
        """Fail before any embedding work if the store holds another model's vectors (409 naming
        `carrag reset`), unless the model change can be served (`model_change.py`): then how to embed
        and write with both models."""
        current = await self.embedder.embedding_identity()
        stored = await self.store.embedding_identity()
        if stored is not None and not stored.accepts(current):
            if self.model_change is None:
                stored.check_accepts(current)
            else:
                return current, await self.model_change.ingest_plan(stored, current)
        return current, None


def _stored_result(
    document: DocumentRecord, status: IngestStatus, source_id: str, timings: dict[str, float], collection: Collection
) -> IngestResult:
    """The result of an ingest that found its content stored already, in ``document``."""
    return IngestResult(
        document_id=document.document_id,
        filename=document.filename,
        chunk_count=document.chunk_count,
        tags=document.tags,
        status=status,
        source_id=source_id,
        timings_ms=timings,
        collection=collection.name,
    )


def _document_record(
    parsed: ParsedDocument,
    options: IngestCommand,
    source_id: str,
    digest: str,
    chunk_count: int,
    tags: list[str],
    chunking: dict[str, Any],
    collection: Collection,
) -> DocumentRecord:
    return DocumentRecord(
        document_id=new_document_id(),
        filename=parsed.filename,
        source_id=source_id,
        source_type=parsed.source_type,
        content_hash=digest,
        chunk_count=chunk_count,
        tags=tags,
        metadata={
            "filename": parsed.filename,
            "source_type": parsed.source_type,
            **parsed.metadata,
            "chunking": chunking,
        },
        created_at=datetime.now(UTC).isoformat(),
        title=parsed.title,
        external_id=options.external_id,
        user_metadata=dict(options.metadata),
        collection_id=collection.collection_id,
    )

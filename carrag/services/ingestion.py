"""The ingestion pipeline (seed 001): parse → auto-tag → chunk → embed → store.

File uploads and URLs converge after parsing. Nothing reaches the store until every chunk has a
vector; the store then writes the document in one atomic step (replacing an older version of the
same source), so a failure or cancellation at any stage leaves no partial document.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from carrag.services.admission import AdmissionGate
from carrag.services.chunking import chunk_document, default_strategy
from carrag.services.collections import CollectionService
from carrag.services.embedders.coalescing import CoalescingEmbedder
from carrag.services.embedders.service import EmbeddingService
from carrag.services.errors import CarragError, DependencyUnavailable, InvalidInput
from carrag.services.fetchers.base import MEDIA_TYPE_EXTENSIONS, Fetcher
from carrag.services.ids import content_hash, new_document_id
from carrag.services.model_change import ModelChange, PendingChangeWrite
from carrag.services.models import (
    DEFAULT_COLLECTION,
    Chunk,
    DocumentRecord,
    EmbeddingIdentity,
    OriginalFile,
    ParsedDocument,
)
from carrag.services.originals import fetched_original, uploaded_original
from carrag.services.parsers import check_supported, parse_file
from carrag.services.parsers.decoding import decode_declared
from carrag.services.parsers.pdf import Progress, parse_pdf
from carrag.services.parsers.pdf_markdown import parse_pdf_markdown
from carrag.services.parsers.pdf_ocr import reader_for
from carrag.services.parsers.text import parse_text
from carrag.services.parsers.web import parse_web_page
from carrag.services.requests import IngestCommand
from carrag.services.settings import Settings
from carrag.services.stores.base import Store
from carrag.services.tagging import Tagger, auto_tags, merge_tags
from carrag.services.telemetry import NullTelemetry, Telemetry
from carrag.services.vocabulary import ChunkingStrategy, IngestStatus, JobState

logger = logging.getLogger(__name__)


class IngestObserver(Protocol):
    """Receives progress; the jobs room and the CLI implement it."""

    def stage(self, stage: JobState) -> None: ...

    def embedded(self, done: int, total: int) -> None: ...

    def ocr_read(self, done: int, total: int) -> None: ...  # PDF pages read by OCR, while parsing


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


IngestOptions = IngestCommand  # the former name; other open branches still use it. Remove once they have merged.


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


def text_document(text: str, filename: str, title: str | None) -> ParsedDocument:
    """Already-extracted text as a parsed document."""
    if not text.strip():
        raise InvalidInput(f"{filename} contains no text.")
    return ParsedDocument(
        text=text, filename=filename, source_type="text", metadata={"line_count": len(text.splitlines())}, title=title
    )


def default_chunking(parsed: ParsedDocument, settings: Settings) -> ChunkingStrategy:
    """The strategy for a request that names none: by headers for Markdown and HTML (their parsers mark
    them ``metadata.markup = "markdown"``), else the format's own (`chunking.default_strategy`, e.g.
    ``code`` for source files), else CHUNKING_STRATEGY."""
    if settings.markdown_chunking_for_markup and parsed.metadata.get("markup") == "markdown":
        return ChunkingStrategy.MARKDOWN
    return default_strategy(parsed, settings.chunking_strategy)


DocumentEmbedder = Callable[..., Awaitable[np.ndarray]]  # (texts, progress=...) -> vectors


@dataclass(slots=True)
class BulkDocument:
    """One document for `IngestionService.ingest_many`: extracted ``text``, or a file's ``data``."""

    filename: str
    options: IngestCommand = field(default_factory=IngestCommand)
    text: str | None = None
    data: bytes | None = None


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
        self.ocr = reader_for(settings.ocr_enabled, settings.ocr_dpi)  # None: OCR off or not installed
        self.admission = AdmissionGate(settings.max_concurrent_ingests, settings.ingest_queue_size, "ingestion")
        self.accepting = True  # False once shutdown has begun (stop_accepting)
        self.telemetry = telemetry or NullTelemetry()

    # --- admission -------------------------------------------------------------------------------
    def stop_accepting(self) -> None:
        """Shutdown has begun: ingests that have not got a slot yet are refused with 503."""
        self.accepting = False

    def _check_accepting(self) -> None:
        if not self.accepting:
            raise DependencyUnavailable(
                "ingestion", "the service is shutting down and accepts no new ingests; retry after it restarts."
            )

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """At most MAX_CONCURRENT_INGESTS run; up to INGEST_QUEUE_SIZE wait; beyond that, 429.
        During shutdown, 503."""
        self._check_accepting()
        async with self.admission.admit():
            self._check_accepting()  # shutdown may have begun while this one waited
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
            parsed = await self._parse_upload(data, filename, timings, observer)
            original = uploaded_original(data, filename) if self.settings.keep_originals else None
            return await self._ingest_parsed(parsed, options, observer, timings, original=original)

    async def _parse_upload(
        self, data: bytes, filename: str, timings: dict[str, float], observer: IngestObserver | None = None
    ) -> ParsedDocument:
        check_supported(filename)
        started = time.perf_counter()
        parsed = await asyncio.to_thread(
            parse_file,
            data,
            filename,
            max_pdf_pages=self.settings.max_pdf_pages,
            pdf_mode=self.settings.pdf_mode,
            ocr=self.ocr,
            on_progress=_progress_from_thread(observer),
        )
        timings["parse"] = _ms(started)
        return parsed

    async def ingest_url(
        self, url: str, options: IngestCommand, observer: IngestObserver | None = None
    ) -> IngestResult:
        async with self.slot():
            return await self._ingest_url(url, options, observer or _SilentObserver())

    async def _ingest_url(self, url: str, options: IngestCommand, observer: IngestObserver) -> IngestResult:
        timings: dict[str, float] = {}
        observer.stage(JobState.PARSING)
        started = time.perf_counter()
        page = await self.fetcher.fetch(url)
        timings["fetch"] = _ms(started)
        started = time.perf_counter()
        parsed = await asyncio.to_thread(
            self._parse_fetched, page.content_type, page.body, page.charset, url, _progress_from_thread(observer)
        )
        timings["parse"] = _ms(started)
        parsed.metadata.setdefault("url", url)
        if page.final_url != url:
            parsed.metadata["final_url"] = page.final_url
        original = fetched_original(page) if self.settings.keep_originals else None
        return await self._ingest_parsed(parsed, options, observer, timings, original=original)

    def _parse_fetched(
        self, content_type: str, body: bytes, charset: str | None, url: str, on_progress: Progress | None = None
    ) -> ParsedDocument:
        if content_type == "application/pdf":
            pdf_parser = parse_pdf_markdown if self.settings.pdf_mode == "markdown" else parse_pdf
            parsed = pdf_parser(body, url, max_pages=self.settings.max_pdf_pages, ocr=self.ocr, on_progress=on_progress)
        elif content_type in ("text/html", "application/xhtml+xml"):
            parsed = parse_web_page(decode_declared(body, charset)[0], url)
        elif content_type in MEDIA_TYPE_EXTENSIONS:  # an office document, e-book or e-mail
            parsed = parse_file(body, document_name(url, MEDIA_TYPE_EXTENSIONS[content_type]))
        else:
            parsed = parse_text(body, url, charset=charset)
            if not parsed.text.strip():
                raise InvalidInput(f"{url} contains no extractable text.")
        parsed.filename = url
        parsed.source_type = "web"
        parsed.metadata.setdefault("extracted_at", datetime.now(UTC).isoformat())
        return parsed

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
        """Ingest many documents, embedding their chunks together in large batches.

        Each document still goes through the whole pipeline and is written in its own atomic step;
        only the embedding calls are shared (`carrag/services/embedders/coalescing.py`), which is what
        makes bulk loads of many small documents run at the embedder's full speed. A document that
        fails gets its error in the result list (input order); the others go on.
        """
        items = list(documents)
        results: list[IngestResult | CarragError | None] = [None] * len(items)
        coalescer = CoalescingEmbedder(self.embedder, max_texts=self.settings.embed_batch_size * 16)
        gate = asyncio.Semaphore(concurrency)

        async def one(position: int, item: BulkDocument) -> None:
            async with gate:
                try:
                    result: IngestResult | CarragError = await self._ingest_bulk_item(item, coalescer.embed_documents)
                except CarragError as exc:
                    result = exc
            results[position] = result
            if on_result is not None:
                on_result(position, result)

        try:
            async with asyncio.TaskGroup() as group:
                for position, item in enumerate(items):
                    group.create_task(one(position, item))
        finally:
            await coalescer.aclose()
        return [result for result in results if result is not None]

    async def _ingest_bulk_item(self, item: BulkDocument, embed: DocumentEmbedder) -> IngestResult:
        timings: dict[str, float] = {}
        original = None
        if item.data is not None:
            parsed = await self._parse_upload(item.data, item.filename, timings)
            original = uploaded_original(item.data, item.filename) if self.settings.keep_originals else None
        else:
            parsed = text_document(item.text or "", item.filename, item.options.title)
        return await self._ingest_parsed(parsed, item.options, _SilentObserver(), timings, embed, original=original)

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
        existing = await self.store.find_by_source(source_id, collection.collection_id)
        if existing is not None and existing.content_hash == digest and not options.force:
            status = IngestStatus.UNCHANGED
            updated = await self._add_metadata(existing, user_tags, options.metadata)
            if updated is not None:
                existing, status = updated, IngestStatus.UPDATED
            self._report(status, timings)
            return IngestResult(
                document_id=existing.document_id,
                filename=existing.filename,
                chunk_count=existing.chunk_count,
                tags=existing.tags,
                status=status,
                source_id=source_id,
                timings_ms=timings,
                collection=collection.name,
            )
        if not settings.allow_duplicates:
            twin = await self.store.find_by_content_hash(digest, collection.collection_id)
            if twin is not None and twin.source_id != source_id:
                logger.info(
                    "duplicate content; nothing stored",
                    extra={"source_id": source_id, "duplicate_of": twin.source_id, "document_id": twin.document_id},
                )
                # the upload's tags and metadata still reach the content: added to the document holding it
                twin = await self._add_metadata(twin, user_tags, options.metadata) or twin
                return IngestResult(
                    document_id=twin.document_id,
                    filename=twin.filename,
                    chunk_count=twin.chunk_count,
                    tags=twin.tags,
                    status=IngestStatus.DUPLICATE,
                    source_id=twin.source_id,
                    timings_ms=timings,
                    collection=collection.name,
                )
        identity, pending_change = await self._check_embedding_identity()

        observer.stage(JobState.TAGGING)
        started = time.perf_counter()
        generated = await auto_tags(self.tagger, parsed.text[: settings.tagging_content_chars], parsed.filename)
        tags = merge_tags(generated, user_tags)
        timings["tag"] = _ms(started)

        observer.stage(JobState.CHUNKING)
        started = time.perf_counter()
        strategy = options.chunking or default_chunking(parsed, settings)
        size = options.chunk_size or settings.chunk_size
        overlap = settings.chunk_overlap if options.chunk_overlap is None else options.chunk_overlap
        split_size = size
        if options.chunk_size is None and len(parsed.text) <= settings.whole_document_chars:
            split_size = max(size, len(parsed.text))  # a short document stays one chunk
        chunks = await asyncio.to_thread(chunk_document, parsed, strategy, split_size, overlap, settings.min_chunk_size)
        if not chunks:
            raise InvalidInput(f"{parsed.filename} contains no extractable text.")
        timings["chunk"] = _ms(started)

        observer.stage(JobState.EMBEDDING)
        started = time.perf_counter()
        texts = [embedding_input(chunk, parsed) for chunk in chunks]
        if pending_change is not None:  # both models' vectors (`model_change.py`); no coalescing
            twice = await pending_change.embed(texts, progress=observer.embedded)
        else:
            vectors = await (embed or self.embedder.embed_documents)(texts, progress=observer.embedded)
        timings["embed"] = _ms(started)

        observer.stage(JobState.INDEXING)
        started = time.perf_counter()
        record = DocumentRecord(
            document_id=new_document_id(),
            filename=parsed.filename,
            source_id=source_id,
            source_type=parsed.source_type,
            content_hash=digest,
            chunk_count=len(chunks),
            tags=tags,
            metadata={
                "filename": parsed.filename,
                "source_type": parsed.source_type,
                **parsed.metadata,
                "chunking": {"strategy": strategy, "chunk_size": size, "chunk_overlap": overlap},
            },
            created_at=datetime.now(UTC).isoformat(),
            title=parsed.title,
            external_id=options.external_id,
            user_metadata=dict(options.metadata),
            collection_id=collection.collection_id,
        )
        # the original (when kept) is written with the document, in the same atomic step
        if pending_change is not None:
            replaced = await pending_change.write(record, chunks, twice, original)
        else:
            replaced = await self.store.write_document(record, chunks, vectors, identity, original=original)
        timings["index"] = _ms(started)
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


def document_name(url: str, extension: str) -> str:
    """A file name for a fetched document: the URL's last path segment when it has the extension the
    server's media type implies, else ``document`` with it (the parser goes by the extension)."""
    name = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return name if name.lower().endswith(extension) else f"document{extension}"


def _progress_from_thread(observer: IngestObserver | None) -> Progress | None:
    """``observer.ocr_read`` for a parser running in a worker thread (OCR pages done/total during the
    ``parsing`` stage): each call is handed to the event loop's thread."""
    if observer is None:
        return None
    loop = asyncio.get_running_loop()

    def report(done: int, total: int) -> None:
        loop.call_soon_threadsafe(observer.ocr_read, done, total)

    return report


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)

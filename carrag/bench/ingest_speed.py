"""Phases 1 and 2 of `carrag bench`: PDF extraction (pages/s) and ingestion (chunks/s of the pipeline next
to the raw embedding backend on exactly the same chunk texts)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from carrag.bench.beir import BeirDataset
from carrag.bench.measuring import PeakRss
from carrag.bench.runner import ingest_corpus
from carrag.services.chunking import chunk_document
from carrag.services.container import Container
from carrag.services.embedders.base import EmbeddingBackend
from carrag.services.errors import InvalidInput
from carrag.services.ingestion import embedding_input
from carrag.services.models import Chunk, ParsedDocument
from carrag.services.parsers import parse_file
from carrag.services.parsers.budget import ParseBudget
from carrag.services.settings import Settings


def bench_pdf(path: Path, settings: Settings) -> dict[str, Any]:
    if not path.is_file():
        raise InvalidInput(f"PDF {path} does not exist (give another with --pdf).")
    data = path.read_bytes()
    import pymupdf  # noqa: F401  - the library's import time is not extraction time

    with PeakRss() as rss:
        started = time.perf_counter()
        parsed = parse_file(data, path.name, budget=ParseBudget.from_settings(settings), pdf_mode=settings.pdf_mode)
        seconds = time.perf_counter() - started
    pages = int(parsed.metadata.get("total_pages") or len(parsed.page_spans) or 1)
    return {
        "file": str(path),
        "pages": pages,
        "characters": len(parsed.text),
        "seconds": round(seconds, 3),
        "pages_per_second": round(pages / seconds, 1),
        "pdf_mode": settings.pdf_mode,
        "peak_rss_mb": round(rss.peak_mb, 1),
    }


@dataclass(slots=True)
class PreparedDocument:
    """A corpus record as the pipeline chunks it, with the raw backend's vectors for its chunks."""

    record_id: str
    title: str | None
    text: str
    chunks: list[Chunk]
    vectors: np.ndarray | None = None


def prepare_documents(dataset: BeirDataset, settings: Settings) -> list[PreparedDocument]:
    prepared = []
    for record in dataset.corpus:
        text = record.text if record.text.strip() else record.title
        parsed = ParsedDocument(text=text, filename=record.doc_id, source_type="text", title=record.title or None)
        chunks = chunk_document(
            parsed, settings.chunking_strategy, settings.chunk_size, settings.chunk_overlap, settings.min_chunk_size
        )
        prepared.append(PreparedDocument(record.doc_id, record.title or None, text, chunks))
    return prepared


def embedding_texts(document: PreparedDocument) -> list[str]:
    parsed = ParsedDocument(text=document.text, filename=document.record_id, source_type="text", title=document.title)
    return [embedding_input(chunk, parsed) for chunk in document.chunks]


async def raw_embed(backend: EmbeddingBackend, documents: list[PreparedDocument], batch_size: int) -> tuple[int, float]:
    """The backend alone on the pipeline's chunk texts, sorted by length and sent in batches of
    ``batch_size`` (the model's best case). Keeps each document's vectors for the query phase."""
    texts = [text for document in documents for text in embedding_texts(document)]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    started = time.perf_counter()
    parts = [
        await backend.embed([texts[i] for i in order[offset : offset + batch_size]], "document")
        for offset in range(0, len(order), batch_size)
    ]
    seconds = time.perf_counter() - started
    if parts:
        sorted_vectors = np.vstack(parts)
        vectors = np.empty_like(sorted_vectors)
        vectors[order] = sorted_vectors
        position = 0
        for document in documents:
            document.vectors = vectors[position : position + len(document.chunks)]
            position += len(document.chunks)
    return len(texts), seconds


async def bench_ingestion(
    container: Container,
    backend: EmbeddingBackend,
    dataset: BeirDataset,
    documents: list[PreparedDocument],
    batch_size: int,
    slices: int = 6,
) -> dict[str, Any]:
    """Pipeline and raw embedder on the same chunks, interleaved slice by slice (alternating which
    goes first) so that a change in machine load affects both figures alike."""
    slices = max(1, min(slices, len(documents)))
    bounds = [round(i * len(documents) / slices) for i in range(slices + 1)]
    pipeline_chunks = raw_chunks = 0
    pipeline_seconds = raw_seconds = 0.0
    with PeakRss() as rss:
        for index in range(slices):
            low, high = bounds[index], bounds[index + 1]
            part = replace(dataset, corpus=dataset.corpus[low:high])

            async def pipeline(part: BeirDataset = part) -> None:
                nonlocal pipeline_chunks, pipeline_seconds
                started = time.perf_counter()
                pipeline_chunks += await ingest_corpus(container, part)
                pipeline_seconds += time.perf_counter() - started

            async def raw(low: int = low, high: int = high) -> None:
                nonlocal raw_chunks, raw_seconds
                count, seconds = await raw_embed(backend, documents[low:high], batch_size)
                raw_chunks += count
                raw_seconds += seconds

            for step in (pipeline, raw) if index % 2 == 0 else (raw, pipeline):
                await step()
    return {
        "dataset": dataset.name,
        "pipeline": {
            "documents": len(dataset.corpus),
            "chunks": pipeline_chunks,
            "seconds": round(pipeline_seconds, 2),
            "chunks_per_second": round(pipeline_chunks / pipeline_seconds, 1),
        },
        "raw_embedder": {
            "chunks": raw_chunks,
            "seconds": round(raw_seconds, 2),
            "chunks_per_second": round(raw_chunks / raw_seconds, 1),
        },
        "pipeline_over_raw": round(raw_seconds / pipeline_seconds * pipeline_chunks / max(raw_chunks, 1), 3),
        "slices": slices,
        "peak_rss_mb": round(rss.peak_mb, 1),
    }

"""Chunking strategies. `chunk_document` is the one entry point the pipeline calls."""

from __future__ import annotations

from services.chunking.recursive import chunk_recursive
from services.models import Chunk, ParsedDocument

STRATEGIES = ("recursive",)


def chunk_document(
    document: ParsedDocument, strategy: str, size: int, overlap: int, min_chunk_size: int = 0
) -> list[Chunk]:
    if strategy == "recursive":
        return chunk_recursive(document.text, size, overlap, document.page_spans)
    raise ValueError(f"unknown chunking strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")

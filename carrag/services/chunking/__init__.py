"""Chunking strategies. `chunk_document` is the one entry point the pipeline calls.

Every strategy works on character offsets into the extracted text (see `spans.py`), so for each
chunk ``text[char_start:char_end] == chunk.text``, no non-whitespace character is left out, chunk
indexes run 0, 1, 2, ... and PDF page numbers follow from the offsets, as do the regions of the
pages a PDF chunk is drawn in (`positions.TextPositions.regions`).
"""

from __future__ import annotations

from carrag.services.chunking.code import chunk_code
from carrag.services.chunking.fixed import chunk_fixed
from carrag.services.chunking.markdown import chunk_markdown
from carrag.services.chunking.paragraph import chunk_paragraph
from carrag.services.chunking.recursive import chunk_recursive
from carrag.services.chunking.sentence import chunk_sentence
from carrag.services.errors import InvalidInput
from carrag.services.models import Chunk, ParsedDocument
from carrag.services.vocabulary import ChunkingStrategy

# Formats whose text has a structure one strategy follows best; used when the request names none.
FORMAT_STRATEGIES = {"code": ChunkingStrategy.CODE}  # source_type -> strategy


def default_strategy(document: ParsedDocument, configured: ChunkingStrategy) -> ChunkingStrategy:
    return FORMAT_STRATEGIES.get(document.source_type, configured)


def chunk_document(
    document: ParsedDocument, strategy: ChunkingStrategy, size: int, overlap: int, min_chunk_size: int = 0
) -> list[Chunk]:
    chunks = _split(document, strategy, size, overlap, min_chunk_size)
    if document.positions is not None:
        for chunk in chunks:
            chunk.regions = document.positions.regions(chunk.char_start, chunk.char_end)
    return chunks


def _split(
    document: ParsedDocument, strategy: ChunkingStrategy, size: int, overlap: int, min_chunk_size: int
) -> list[Chunk]:
    if size < 1 or not 0 <= overlap < size:
        raise InvalidInput(f"chunk_overlap ({overlap}) must be at least 0 and smaller than chunk_size ({size}).")
    text, pages = document.text, document.page_spans
    if strategy == "recursive":
        return chunk_recursive(text, size, overlap, pages)
    if strategy == "fixed":
        return chunk_fixed(text, size, overlap, pages)
    if strategy == "paragraph":
        return chunk_paragraph(text, size, overlap, pages)
    if strategy == "sentence":
        return chunk_sentence(text, size, overlap, min_chunk_size, pages)
    if strategy == "markdown":
        return chunk_markdown(text, size, overlap, pages)
    if strategy == "code":
        return chunk_code(text, size, overlap, pages)
    raise InvalidInput(f"Unknown chunking strategy {strategy!r}; choose one of {', '.join(ChunkingStrategy)}.")

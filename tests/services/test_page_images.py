"""The page picture service's own parts (`page_images.py`): a passage's offsets mapped back to the document
as `expansion.stitch` joins chunks, and the picture cache kept within its size. The route's behaviour,
with real PDFs, is in tests/api/test_pages.py."""

from __future__ import annotations

from carrag.services import page_images
from carrag.services.chunking import chunk_document
from carrag.services.models import ParsedDocument, StoredChunk
from carrag.services.page_drawing import PageImage
from carrag.services.retrieval.expansion import stitch


def test_passage_offsets_map_to_the_document_as_stitch_joins_chunks() -> None:
    text = (
        "| a | b |\n| --- | --- |\n" + "".join(f"| row {i} | {i * i} |\n" for i in range(60)) + "\n\nEnd words. " * 30
    )
    parsed = ParsedDocument(text=text, filename="t.md", source_type="text")
    chunks = [
        StoredChunk("d", c.chunk_index, c.text, c.char_start, c.char_end, "t.md", "t.md", [])
        for c in chunk_document(parsed, "recursive", 200, 50)
    ]
    for first in range(len(chunks) - 3):
        window = chunks[first : first + 3]
        if first % 2:
            window = [window[0], window[2]]  # a gap: stitched with a line break
        passage = stitch(window)
        for passage_start, document_start, length in page_images.passage_segments(window):
            assert passage[passage_start : passage_start + length] == text[document_start : document_start + length]


def test_the_cache_keeps_within_its_size() -> None:
    cache = page_images.PictureCache(capacity=250)
    for index in range(5):
        cache.put(("d", index), PageImage(b"x" * 100, 1, 1, 1, 1.0, 1.0))
    assert cache.size == 200 and cache.get(("d", 0)) is None and cache.get(("d", 4)) is not None
    cache.put(("d", 9), PageImage(b"x" * 300, 1, 1, 1, 1.0, 1.0))  # larger than the whole cache: not kept
    assert cache.get(("d", 9)) is None and cache.size == 200

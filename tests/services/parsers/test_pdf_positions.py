"""Where a PDF chunk is drawn (`pdf_positions.py`, issue 28 part 2): the words of the text layer, and the
boxes OCR reads on a scanned page, located in the final text however hygiene changed it, so each
chunk's regions cover where its words are on the page; in text and Markdown mode alike."""

from __future__ import annotations

import pymupdf
import pytest

from carrag.bench.ocr import scanned_copy
from carrag.services.chunking import chunk_document
from carrag.services.models import Chunk, ParsedDocument
from carrag.services.parsers import parse_file
from carrag.services.parsers.pdf_ocr import ocr_available, reader_for
from carrag.services.parsers.pdf_positions import locate
from carrag.services.positions import TextPositions

needs_ocr = pytest.mark.skipif(not ocr_available(), reason="rapidocr-onnxruntime is not installed")

PARAGRAPHS = [
    "Engine oil. Check the engine oil level every time you refuel the truck. The oil filter is",
    "ef-",  # a word broken at the end of a line: joined into "efficient" by the text hygiene
    "ficient and it is replaced at every change of the oil, every six months.",
    "Tire pressure. The recommended cold tire pressure is thirty five psi front and rear.",
    "Towing. The maximum conventional towing capacity is thirteen thousand pounds with care.",
]


def lined_pdf() -> bytes:
    with pymupdf.open() as document:
        for _ in range(2):
            page = document.new_page(width=400, height=500)
            y = 60.0
            for line in PARAGRAPHS:
                page.insert_text((40, y), line, fontsize=7)
                y += 14
        return document.tobytes()


def word_rects(pdf: bytes, page: int, word: str) -> list[pymupdf.Rect]:
    with pymupdf.open(stream=pdf, filetype="pdf") as document:
        return document[page - 1].search_for(word)


def drawn_in(chunk: Chunk, page: int, rect: pymupdf.Rect) -> bool:
    """Whether the middle of ``rect`` lies in one of the chunk's regions on ``page``."""
    middle = (rect.x0 + rect.x1) / 2, (rect.y0 + rect.y1) / 2
    return any(r.page == page and r.x0 <= middle[0] <= r.x1 and r.y0 <= middle[1] <= r.y1 for r in chunk.regions)


def chunk_holding(parsed: ParsedDocument, chunks: list[Chunk], word: str, page: int) -> Chunk:
    """The first chunk holding the whole of ``word`` as it appears on ``page``."""
    span = next(s for s in parsed.page_spans if s.page == page)
    at = parsed.text.index(word, span.start, span.end)
    return next(c for c in chunks if c.char_start <= at and at + len(word) <= c.char_end)


@pytest.mark.parametrize("mode", ["text", "markdown"])
def test_each_chunk_is_drawn_where_its_words_are(mode: str) -> None:
    pdf = lined_pdf()
    parsed = parse_file(pdf, "lined.pdf", pdf_mode=mode)
    assert "efficient" in parsed.text, "the hyphen hygiene joined the broken word"
    chunks = chunk_document(parsed, "recursive", 120, 20)
    assert all(chunk.regions for chunk in chunks)
    for page in (1, 2):
        for word in ("refuel", "recommended", "conventional", "thousand"):
            chunk = chunk_holding(parsed, chunks, word, page)
            assert drawn_in(chunk, page, word_rects(pdf, page, word)[0]), (mode, page, word, chunk.regions)
        joined = chunk_holding(parsed, chunks, "efficient", page)  # both halves of the broken word
        assert all(
            drawn_in(joined, page, rect) for rect in word_rects(pdf, page, "ef-") + word_rects(pdf, page, "ficient")
        )
    for chunk in chunks:  # offsets within the chunk's span, lines in order
        assert all(0 <= r.start < r.end <= chunk.char_end - chunk.char_start for r in chunk.regions)


def test_the_text_is_the_same_with_positions() -> None:
    pdf = lined_pdf()
    parsed = parse_file(pdf, "lined.pdf")
    with pymupdf.open(stream=pdf, filetype="pdf") as document:
        layer = document[0].get_text()
    assert parsed.text.split("\n\n")[0].replace("efficient", "ef-\nficient").split() == layer.split()


def test_text_the_page_does_not_hold_stays_unlocated() -> None:
    positions = TextPositions()
    pieces = [
        (10.0, 10.0, 40.0, 20.0, "Keep", 0, 0, 0),
        (42.0, 10.0, 80.0, 20.0, "èÜ•ø¶", 0, 0, 1),  # garbage, dropped from the page text
        (82.0, 10.0, 120.0, 20.0, "clean", 0, 0, 2),
        (10.0, 22.0, 60.0, 32.0, "filters", 0, 1, 0),
    ]
    locate(positions, 3, 100, "Keep clean\nfilters", pieces)
    regions = positions.regions(100, 118)
    assert [(r.start, r.end, r.y0) for r in regions] == [(0, 10, 10), (11, 18, 22)]
    assert regions[0].x0 == 10 and regions[0].x1 == 120


@needs_ocr
@pytest.mark.slow
def test_a_scanned_page_keeps_the_boxes_ocr_read() -> None:
    original = lined_pdf()
    scan, _ = scanned_copy(original, pages=1)
    parsed = parse_file(scan, "scan.pdf", ocr=reader_for(True))
    assert parsed.metadata["ocr_pages"] == [1]
    chunks = chunk_document(parsed, "recursive", 120, 20)
    assert all(chunk.regions for chunk in chunks)
    for word in ("refuel", "recommended", "conventional"):
        chunk = chunk_holding(parsed, chunks, word, 1)
        assert drawn_in(chunk, 1, word_rects(original, 1, word)[0]), (word, chunk.regions)

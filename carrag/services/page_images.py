"""Citations shown on the page they come from (issue 28 part 2): a PDF page drawn from the document's
kept original, with a chunk's regions tinted and the sentences an answer relies on marked
(``GET /documents/{id}/pages/{n}/image``).

What is marked comes from the regions stored with each chunk (`positions.py`). ``highlights`` are
character ranges in the text of the chunks ``window`` (a search hit's ``text`` and ``window``:
the chunks stitched as neighbour expansion stitches them, `retrieval/expansion.stitch`), so an
answer's ``highlights`` can be passed as they are; a range that starts or ends inside a line marks
the part of the line in proportion to its characters.

Drawing is CPU work: off the event loop, at most ``MAX_CONCURRENT_PAGE_IMAGES`` at once (more wait
up to ``QUERY_QUEUE_TIMEOUT``, then 429). Pictures are kept in a least-recently-used cache of
``PAGE_IMAGE_CACHE_MB``, by document (an id names one version) and everything marked on it. A
document that is not a PDF, or whose original was not kept, is refused (409) with the reason.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.admission import AdmissionGate
from carrag.services.documents import DocumentService
from carrag.services.errors import Conflict, InvalidInput, NotFound
from carrag.services.models import StoredChunk
from carrag.services.page_drawing import PageImage, Rect, draw_page
from carrag.services.parsers.budget import ParseBudget
from carrag.services.positions import Region
from carrag.services.settings import Settings

MAX_WINDOW_CHUNKS = 64  # a search hit's window is a few chunks (NEIGHBOUR_WINDOW on each side)
MAX_HIGHLIGHTS = 64


@dataclass(frozen=True, slots=True)
class PageMarks:
    """What to mark on a page: chunk ``chunk``'s regions, and ``highlights`` (``(start, end)`` in the
    text of the chunks ``window``, which defaults to the chunk alone)."""

    chunk: int | None = None
    window: tuple[int, int] | None = None
    highlights: tuple[tuple[int, int], ...] = ()

    def checked(self) -> PageMarks:
        window = self.window or ((self.chunk, self.chunk) if self.chunk is not None else None)
        if self.highlights and window is None:
            raise InvalidInput("highlight needs the chunk (or window) its offsets are in.")
        if window is not None:
            first, last = window
            if not 0 <= first <= last or last - first >= MAX_WINDOW_CHUNKS:
                raise InvalidInput(f"window must be first-last chunk indexes, at most {MAX_WINDOW_CHUNKS} chunks.")
        if len(self.highlights) > MAX_HIGHLIGHTS:
            raise InvalidInput(f"At most {MAX_HIGHLIGHTS} highlight ranges.")
        if any(not 0 <= start < end for start, end in self.highlights):
            raise InvalidInput("A highlight is start-end offsets with 0 <= start < end.")
        return PageMarks(self.chunk, window, tuple(sorted(set(self.highlights))))


class PictureCache:
    """Least recently used pictures, within a total size in bytes."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.size = 0
        self._entries: OrderedDict[tuple[object, ...], PageImage] = OrderedDict()

    def get(self, key: tuple[object, ...]) -> PageImage | None:
        image = self._entries.get(key)
        if image is not None:
            self._entries.move_to_end(key)
        return image

    def put(self, key: tuple[object, ...], image: PageImage) -> None:
        if len(image.png) > self.capacity or key in self._entries:
            return
        self._entries[key] = image
        self.size += len(image.png)
        while self.size > self.capacity:
            _, evicted = self._entries.popitem(last=False)
            self.size -= len(evicted.png)


class PageImageService:
    def __init__(self, settings: Settings, documents: DocumentService) -> None:
        self.settings = settings
        self.documents = documents
        self.budget = ParseBudget.from_settings(settings)
        self.cache = PictureCache(settings.page_image_cache_mb * 1024 * 1024)
        self.admission = AdmissionGate(
            settings.max_concurrent_page_images, None, "page drawing", timeout=settings.query_queue_timeout
        )

    async def image(
        self, document_id: str, page: int, marks: PageMarks = PageMarks(), principal: Principal = FULL_ACCESS
    ) -> PageImage:
        """Page ``page`` of the document as a PNG with ``marks``; NotFound (404) for a document ``principal``
        may not read, a page or chunk it does not have; Conflict (409) when it cannot be drawn."""
        marks = marks.checked()
        record = await self.documents.get(document_id, principal)
        if record.source_type != "pdf":
            raise Conflict(
                f"{record.filename} is a {record.source_type} document; page pictures are drawn only for PDFs."
            )
        key = (document_id, page, marks)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        original = await self.documents.store.get_original(document_id)
        if original is None:
            raise Conflict(
                f"{record.filename} has no kept original to draw its pages from: it was ingested before originals "
                "were kept or with KEEP_ORIGINALS=false. Ingest it again with KEEP_ORIGINALS=true."
            )
        chunk_rects, highlight_rects = await self._rects(document_id, page, marks, record.chunk_count, principal)
        async with self.admission.admit():  # also bounds the originals held in memory at once
            pdf = await original.read()
            image = await asyncio.to_thread(
                draw_page,
                pdf,
                record.filename,
                page,
                chunk_rects,
                highlight_rects,
                self.settings.page_image_max_pixels,
                self.budget,
            )
        self.cache.put(key, image)
        return image

    async def _rects(
        self, document_id: str, page: int, marks: PageMarks, chunk_count: int, principal: Principal
    ) -> tuple[list[Rect], list[Rect]]:
        """The rectangles of the chunk's regions on ``page``, and of the highlights."""
        if marks.window is None:
            return [], []
        first, last = marks.window
        indexes = {first, last} | ({marks.chunk} if marks.chunk is not None else set())
        if max(indexes) >= chunk_count:
            raise NotFound(f"Document {document_id} has {chunk_count} chunks; there is no chunk {max(indexes)}.")
        low = min(indexes)
        listed = await self.documents.chunks(document_id, offset=low, limit=max(indexes) - low + 1, principal=principal)
        chunks = {listing.chunk.chunk_index: listing.chunk for listing in listed.items}
        marked = chunks.get(marks.chunk) if marks.chunk is not None else None
        chunk_rects = [_rect(region) for region in marked.regions if region.page == page] if marked else []
        window = [chunks[index] for index in range(first, last + 1) if index in chunks]
        highlight_rects = highlighted(window, page, marks.highlights)
        return chunk_rects, highlight_rects


def _rect(region: Region) -> Rect:
    return (region.x0, region.y0, region.x1, region.y1)


def passage_segments(chunks: Sequence[StoredChunk]) -> list[tuple[int, int, int]]:
    """``(passage offset, document offset, length)`` of each stretch of the text `stitch` makes of
    ``chunks``: where each part of a passage comes from in the document text."""
    ordered = sorted(chunks, key=lambda chunk: chunk.chunk_index)
    if not ordered:
        return []
    first = ordered[0]
    span = first.char_end - first.char_start
    segments = [(len(first.text) - span, first.char_start, span)]  # after a table header it repeats
    position, covered = len(first.text), first.char_end
    for chunk in ordered[1:]:
        if chunk.char_end <= covered:
            continue
        if chunk.char_start < covered:
            segments.append((position, covered, chunk.char_end - covered))
            position += chunk.char_end - covered
        else:
            position += 1  # stitch joins chunks that do not overlap with a line break
            segments.append((position, chunk.char_start, chunk.char_end - chunk.char_start))
            position += chunk.char_end - chunk.char_start
        covered = chunk.char_end
    return segments


def highlighted(window: Sequence[StoredChunk], page: int, highlights: Sequence[tuple[int, int]]) -> list[Rect]:
    """The rectangles on ``page`` of the ``highlights`` (offsets in the stitched text of ``window``): the
    part of each of the window's line regions that a highlight covers, in proportion to its characters."""
    if not highlights:
        return []
    ranges: list[tuple[int, int]] = []  # in the document text
    for passage_start, document_start, length in passage_segments(window):
        for start, end in highlights:
            low, high = max(start, passage_start), min(end, passage_start + length)
            if low < high:
                ranges.append((document_start + low - passage_start, document_start + high - passage_start))
    rects: set[Rect] = set()
    for chunk in window:
        for region in chunk.regions:
            if region.page != page or region.end <= region.start:
                continue
            region_start, region_end = chunk.char_start + region.start, chunk.char_start + region.end
            for start, end in ranges:
                low, high = max(start, region_start), min(end, region_end)
                if low < high:
                    width = (region.x1 - region.x0) / (region_end - region_start)
                    left = region.x0 + (low - region_start) * width
                    right = region.x0 + (high - region_start) * width
                    rects.add((round(left, 1), region.y0, round(right, 1), region.y1))
    return sorted(rects, key=lambda rect: (rect[1], rect[0]))

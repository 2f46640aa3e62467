"""Drawing one page of a PDF as a PNG picture, with rectangles marked as with a highlighter.

Synchronous CPU work (MuPDF renders and encodes, numpy marks): `page_images.py` runs it off the event
loop. The page is drawn at the resolution that fits ``max_pixels`` (never above `MAX_ZOOM`), after
the images on it are checked against ``MAX_IMAGE_PIXELS`` (MuPDF decodes an image whole to draw it),
as the OCR reader does. Rectangles are in the page's unrotated coordinates (what text extraction
gives, `positions.py`) and are turned with the page as it is shown. Marking multiplies the page by
the colour (numpy), so text stays black on a tinted background.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from carrag.services.errors import NotFound
from carrag.services.parsers.budget import ParseBudget
from carrag.services.parsers.pdf import open_pdf
from carrag.services.parsers.pdf_ocr import check_images

Rect = tuple[float, float, float, float]

MAX_ZOOM = 4.0  # 288 dpi: a small page is not blown up further
CHUNK_TINT = (255, 236, 140)  # the chunk: a pale highlighter yellow
HIGHLIGHT_TINT = (255, 178, 70)  # the sentences an answer relies on: orange


@dataclass(slots=True)
class PageImage:
    png: bytes
    width: int  # pixels
    height: int
    page_count: int
    page_width: float  # the page as shown, in points
    page_height: float


def draw_page(
    pdf: bytes,
    filename: str,
    page_number: int,
    chunk: Sequence[Rect],
    highlights: Sequence[Rect],
    max_pixels: int,
    budget: ParseBudget,
) -> PageImage:
    """Page ``page_number`` (1-based) of ``pdf`` with ``chunk`` tinted yellow and ``highlights`` orange;
    NotFound when the document has no such page."""
    import pymupdf

    with open_pdf(pdf, filename, budget.max_pdf_pages) as document:
        if not 1 <= page_number <= document.page_count:
            raise NotFound(f"{filename} has {document.page_count} pages; there is no page {page_number}.")
        page = document[page_number - 1]
        check_images(page, budget.max_image_pixels)
        shown = page.rect
        zoom = min(MAX_ZOOM, fitting_zoom(shown.width, shown.height, max_pixels))
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
        width, height = pixmap.width, pixmap.height
        picture = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(height, pixmap.stride // 3, 3)[:, :width]
        tint = np.full((height, width, 3), 255, dtype=np.uint16)
        to_pixels = page.rotation_matrix * pymupdf.Matrix(zoom, zoom)
        for rects, colour in ((chunk, CHUNK_TINT), (highlights, HIGHLIGHT_TINT)):
            for rect in rects:
                box = (pymupdf.Rect(rect) * to_pixels).round()  # the pixels it touches
                tint[max(box.y0, 0) : max(box.y1, 0), max(box.x0, 0) : max(box.x1, 0)] = colour
        marked = (picture * tint // 255).astype(np.uint8)
        png = pymupdf.Pixmap(pymupdf.csRGB, width, height, marked.tobytes(), False).tobytes("png")
        return PageImage(png, width, height, document.page_count, shown.width, shown.height)


def fitting_zoom(width: float, height: float, max_pixels: int) -> float:
    """The largest zoom at which a ``width`` × ``height`` page fits ``max_pixels`` though MuPDF rounds each
    side up to a whole pixel: the root of ``(width·z + 1)(height·z + 1) = max_pixels``."""
    width, height = max(width, 1.0), max(height, 1.0)
    sides = width + height
    return (math.sqrt(sides * sides + 4 * width * height * (max_pixels - 1)) - sides) / (2 * width * height)

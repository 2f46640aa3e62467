"""OCR of PDF pages without usable text, with rapidocr-onnxruntime (PaddleOCR models in ONNX form).

The detection and recognition models ship inside the wheel, so OCR works offline; nothing is
downloaded. It is on by default when the package is installed and ``OCR_ENABLED`` is true
(`reader_for`); the PDF parsers call the reader for each page without usable text and for each
garbage block of other pages (`pdf.py`).

A page with neither images nor vector graphics is blank and skipped. A page (or an area of
it) is rendered at ``OCR_DPI`` with PyMuPDF — at a lower resolution when that would exceed
``OCR_MAX_PAGE_PIXELS``, and not at all when an image on it is larger than ``MAX_IMAGE_PIXELS``
(MuPDF decodes it whole to draw it) — and read (`read_image`); pictures (`image.py`) are shrunk to
the same pixel budget. The text boxes found are put back into lines (boxes whose vertical centres
fall inside the line's height, left to right) and the lines into paragraphs (a gap taller than
1.5 lines starts a new paragraph). A page's boxes are returned with its text, in page coordinates,
so a chunk read by OCR knows where it is on the page (`PlacedText`).
The engine is loaded once per process on first use (about 2 s) and used by one thread at a time;
the parsers run off the event loop, so OCR never blocks it.
"""

from __future__ import annotations

import importlib.util
import math
import statistics
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget, too_large
from carrag.services.parsers.pdf import OcrReader, PlacedText, Rect
from carrag.services.parsers.pdf_positions import Piece

OCR_PACKAGE = "rapidocr_onnxruntime"
PARAGRAPH_GAP_LINES = 1.5
MIN_CONFIDENCE = 0.5  # boxes read with less confidence are dropped
DETECTION_MAX_SIDE = 1600  # pixels: text lines are found on a page shrunk to this, read at full resolution
LETTER_LONG_SIDE_INCHES = 11

_engine_lock = threading.Lock()


def ocr_available() -> bool:
    return importlib.util.find_spec(OCR_PACKAGE) is not None


@lru_cache(maxsize=1)
def _engine() -> Any:
    from rapidocr_onnxruntime import RapidOCR

    # The detector's default ("min", 736) enlarges an image until its *short* side is 736 pixels: a
    # 27 × 410 strip (one line of a garbage area) became 736 × 11,176 — 35 s and over a gigabyte. The
    # images it gets are already at reading resolution (and pages shrunk to DETECTION_MAX_SIDE), so it
    # may only shrink them.
    return RapidOCR(det_limit_type="max", det_limit_side_len=DETECTION_MAX_SIDE)


@dataclass(slots=True)
class TextBox:
    top: float
    bottom: float
    left: float
    right: float
    text: str

    @property
    def centre(self) -> float:
        return (self.top + self.bottom) / 2


def boxes_to_lines(boxes: list[TextBox]) -> list[list[TextBox]]:
    """Text boxes → lines, top to bottom, each left to right."""
    lines: list[list[TextBox]] = []
    for box in sorted(boxes, key=lambda box: (box.centre, box.left)):
        line = lines[-1] if lines else None
        if line is not None and min(b.top for b in line) <= box.centre <= max(b.bottom for b in line):
            line.append(box)
        else:
            lines.append([box])
    for line in lines:
        line.sort(key=lambda box: box.left)
    return lines


def boxes_to_text(boxes: list[TextBox]) -> str:
    """Text boxes → lines → paragraphs."""
    return lines_to_text(boxes_to_lines(boxes))


def lines_to_text(lines: list[list[TextBox]]) -> str:
    if not lines:
        return ""
    heights = [max(b.bottom for b in line) - min(b.top for b in line) for line in lines]
    line_height = statistics.median(heights) or 1.0
    parts: list[str] = []
    previous_bottom: float | None = None
    for line in lines:
        top = min(b.top for b in line)
        if previous_bottom is not None:
            parts.append("\n\n" if top - previous_bottom > PARAGRAPH_GAP_LINES * line_height else "\n")
        parts.append(" ".join(box.text for box in line))
        previous_bottom = max(b.bottom for b in line)
    return "".join(parts)


def read_image(image: Any) -> list[list[TextBox]]:
    """The lines of text boxes OCR reads in an image (an ``H×W×3`` uint8 BGR array), in pixels.

    RapidOCR's one-call pipeline either detects at full resolution (slow: ~5x the time on a 300 dpi
    page) or, past its ``max_side_len``, shrinks the image before cropping the lines it reads (at
    the default 2000 a 300 dpi page is read at ~180 dpi and words run together: "Atotalof3trucks").
    So its two stages are called apart (the API of the pinned 1.4 release): text lines are
    detected on a copy shrunk to `DETECTION_MAX_SIDE`, and cropped from the full-resolution image
    for recognition. No angle classifier: pages are upright.
    """
    import cv2
    import numpy as np

    height, width = image.shape[:2]
    scale = min(1.0, DETECTION_MAX_SIDE / max(height, width))
    small = (
        image
        if scale == 1.0
        else cv2.resize(image, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA)
    )
    with _engine_lock:
        engine = _engine()
        found, _ = engine.text_det(small)
        if found is None or len(found) == 0:
            return []
        corners = (np.asarray(engine.sorted_boxes(found), dtype=np.float32) / scale).astype(np.float32)
        read, _ = engine.text_rec(engine.get_crop_img_list(image, corners))
    boxes = [
        TextBox(
            top=float(box[:, 1].min()),
            bottom=float(box[:, 1].max()),
            left=float(box[:, 0].min()),
            right=float(box[:, 0].max()),
            text=text.strip(),
        )
        for box, (text, confidence) in zip(corners, read, strict=True)
        if text.strip() and float(confidence) >= MIN_CONFIDENCE
    ]
    return boxes_to_lines(boxes)


def fitting_dpi(width_points: float, height_points: float, dpi: int, max_pixels: int) -> int:
    """``dpi``, or the lower (whole) resolution at which an area of that size (in points) has at most
    ``max_pixels``."""
    pixels = (width_points / 72 * dpi) * (height_points / 72 * dpi)
    return dpi if pixels <= max_pixels else max(1, math.floor(dpi * math.sqrt(max_pixels / pixels)))


def render(page: Any, dpi: int, area: Rect | None = None) -> Any:
    """The page (or ``area`` of it, in PDF points) as a BGR array at ``dpi``."""
    import numpy as np
    import pymupdf

    clip = pymupdf.Rect(area) if area is not None else None
    pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csRGB, alpha=False, clip=clip)
    rgb = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.width, 3)
    return np.ascontiguousarray(rgb[:, :, ::-1])


class RapidOcrReader:
    """An `OcrReader`: the OCR text of a PDF page or of an area of it, or of a picture."""

    def __init__(self, dpi: int = 300, budget: ParseBudget = DEFAULT_BUDGET) -> None:
        self.dpi = dpi
        self.budget = budget

    def __call__(self, page: Any, area: Rect | None = None) -> PlacedText:
        images = page.get_images(full=True)
        if area is None and not images and not page.get_drawings():
            return PlacedText("")  # a page with neither images nor vector graphics is blank: nothing to read
        check_images(page, self.budget.max_image_pixels)
        import pymupdf

        rect = page.rect if area is None else pymupdf.Rect(area)
        dpi = fitting_dpi(rect.width, rect.height, self.dpi, self.budget.ocr_max_page_pixels)
        image = render(page, dpi, area)
        if image.shape[0] < 8 or image.shape[1] < 8:  # nothing to read in a sliver
            return PlacedText("")
        lines = read_image(image)
        return PlacedText(lines_to_text(lines), tuple(placed(page, lines, rect, image.shape[1] / rect.width, area)))

    def picture(self, image: Any) -> str:
        """The OCR text of a picture (an ``H×W×3`` BGR array within the pixel budget). A picture smaller
        than a letter page at ``OCR_DPI`` is enlarged (at most twice, within the budget) first: small
        text is read with its words run together ("Therewere20,000bottles")."""
        import cv2

        height, width = image.shape[:2]
        if height < 8 or width < 8:
            return ""
        page_side = LETTER_LONG_SIDE_INCHES * self.dpi
        scale = min(2.0, page_side / max(height, width), math.sqrt(self.budget.ocr_max_page_pixels / (height * width)))
        if scale > 1.05:
            image = cv2.resize(image, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_CUBIC)
        return lines_to_text(read_image(image))


def check_images(page: Any, max_pixels: int) -> None:
    """Refuse (413) a page holding an image larger than ``max_pixels``: MuPDF decodes an image whole to
    draw it, whatever the size it is drawn at."""
    for image in page.get_images(full=True):  # (xref, smask, width, height, ...) from the image's header
        width, height = int(image[2]), int(image[3])
        if width * height > max_pixels:
            raise too_large(
                f"page {page.number + 1}",
                f"holds an image of {width:,} × {height:,} pixels",
                max_pixels,
                "MAX_IMAGE_PIXELS",
            )


def placed(page: Any, lines: list[list[TextBox]], rect: Any, scale: float, area: Rect | None) -> list[Piece]:
    """The boxes of ``lines`` (pixels of ``rect`` rendered at ``scale`` pixels per point) as pieces in the
    page's unrotated coordinates, which text extraction uses: a whole page is rendered as shown
    (rotated), an area as given."""
    import pymupdf

    pieces: list[Piece] = []
    for number, line in enumerate(lines):
        for box in line:
            found = pymupdf.Rect(box.left, box.top, box.right, box.bottom) / scale + (
                rect.x0,
                rect.y0,
                rect.x0,
                rect.y0,
            )
            if area is None:
                found = found * page.derotation_matrix
            pieces.append((found.x0, found.y0, found.x1, found.y1, box.text, 0, number, len(pieces)))
    return pieces


def reader_for(enabled: bool, dpi: int = 300, budget: ParseBudget = DEFAULT_BUDGET) -> OcrReader | None:
    """The OCR reader when OCR is enabled and rapidocr-onnxruntime is installed, else None."""
    return RapidOcrReader(dpi, budget) if enabled and ocr_available() else None

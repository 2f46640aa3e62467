"""Pictures (.png, .jpg, .tif, multi-page TIFF) → text by OCR, page by page like a scanned PDF.

Page count and each page's pixels are checked from the header before decoding; a page larger than
OCR_MAX_PAGE_PIXELS is decoded at reduced scale where the format allows (JPEG) and shrunk before
conversion, so memory follows the budget, not the file. Without OCR an image is refused.
"""

from __future__ import annotations

import io
import math
from typing import Any

from carrag.services.errors import InvalidInput, NoExtractableText
from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget, too_large
from carrag.services.parsers.optional import import_optional
from carrag.services.parsers.pdf import OcrReader, Progress, join_pages

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff")


def ocr_ready(image: Any, max_pixels: int) -> Any:
    """The current page as an ``H×W×3`` BGR array of at most ``max_pixels`` pixels, transparency on white."""
    import numpy as np

    pil = import_optional("PIL.Image", package="pillow", extension="images")
    width, height = image.size
    scale = min(1.0, math.sqrt(max_pixels / (width * height)))
    target = (max(1, int(width * scale)), max(1, int(height * scale)))
    if scale < 1 and image.format == "JPEG":
        image.draft(image.mode, target)  # decoded at 1/2, 1/4 or 1/8 scale
    if image.mode in ("1", "I", "I;16", "F"):
        image = image.convert("L")
    elif image.mode == "P":
        image = image.convert("RGBA")
    elif image.mode not in ("L", "LA", "RGB", "RGBA"):  # CMYK, YCbCr, ...
        image = image.convert("RGB")
    if image.width * image.height > max_pixels:
        image = image.resize(target, pil.Resampling.BOX)  # shrunk in its own mode, before colour
    if image.mode in ("LA", "RGBA"):
        image = pil.alpha_composite(pil.new("RGBA", image.size, "white"), image.convert("RGBA"))
    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])


def parse_image(
    data: bytes,
    filename: str,
    *,
    budget: ParseBudget = DEFAULT_BUDGET,
    ocr: OcrReader | None = None,
    on_progress: Progress | None = None,
) -> ParsedDocument:
    if ocr is None:
        raise NoExtractableText(
            f"{filename} is a picture, read by OCR, which is off (OCR_ENABLED) or not installed "
            "(pip install rapidocr-onnxruntime)."
        )
    pil = import_optional("PIL.Image", package="pillow", extension="images")
    try:
        image = pil.open(io.BytesIO(data))  # the header only
        pages = getattr(image, "n_frames", 1)
    except pil.DecompressionBombError as exc:  # Pillow's own limit, far above ours
        raise too_large(
            filename, f"is too large to decode ({exc})", budget.max_image_pixels, "MAX_IMAGE_PIXELS"
        ) from exc
    except (pil.UnidentifiedImageError, OSError, ValueError) as exc:
        raise InvalidInput(f"{filename} is not a readable image ({exc}).") from exc
    if pages > budget.max_pdf_pages:  # as for a PDF
        raise InvalidInput(f"{filename} has {pages} pages; the limit is {budget.max_pdf_pages} (MAX_PDF_PAGES).")
    texts: list[tuple[int, str]] = []
    for index in range(pages):
        if on_progress is not None:
            on_progress(index, pages)
        try:
            image.seek(index)
            width, height = image.size
            if width * height > budget.max_image_pixels:
                where = f"page {index + 1} is" if pages > 1 else "is"
                raise too_large(
                    filename, f"{where} {width:,} × {height:,} pixels", budget.max_image_pixels, "MAX_IMAGE_PIXELS"
                )
            picture = ocr_ready(image, budget.ocr_max_page_pixels)
        except pil.DecompressionBombError as exc:
            raise too_large(
                filename, f"is too large to decode ({exc})", budget.max_image_pixels, "MAX_IMAGE_PIXELS"
            ) from exc
        except (OSError, ValueError, SyntaxError) as exc:  # a damaged or truncated page
            raise InvalidInput(f"{filename}: page {index + 1} cannot be decoded ({exc}).") from exc
        texts.append((index + 1, ocr.picture(picture).rstrip()))
    if on_progress is not None:
        on_progress(pages, pages)
    text, spans = join_pages(texts)
    if not spans:
        raise NoExtractableText(f"{filename} contains no text that OCR could read.")
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="image",
        metadata={
            "format": image.format,
            "pages": pages,
            "pages_with_text": len(spans),
            "ocr_pages": [s.page for s in spans],
        },
        page_spans=spans,
    )

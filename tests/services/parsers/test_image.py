"""Pictures read by OCR like scanned pages (issue 27): formats, pages, the pixel budget, refusals."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from carrag.services.errors import InvalidInput, NoExtractableText, PayloadTooLarge
from carrag.services.parsers import parse_file
from carrag.services.parsers.budget import ParseBudget
from carrag.services.parsers.pdf_ocr import ocr_available, reader_for
from tests.services.parsers.formats import REAL


class FakeReader:
    """Records the pictures it is given; reads each as one line naming its size."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []
        self.corners: list[int] = []

    def __call__(self, page, area):
        raise AssertionError("a picture is not a PDF page")

    def picture(self, image) -> str:
        self.shapes.append(image.shape)
        self.corners.append(int(image[0, 0].sum()))
        return f"Page of {image.shape[1]} by {image.shape[0]} pixels."


def encoded(image: Image.Image, kind: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=kind, **options)
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "kind"), [("scan.png", "PNG"), ("scan.jpg", "JPEG"), ("scan.tif", "TIFF")])
def test_each_picture_format_is_read(name: str, kind: str) -> None:
    reader = FakeReader()
    parsed = parse_file(encoded(Image.new("RGB", (320, 200), "white"), kind), name, ocr=reader)
    assert parsed.text == "Page of 320 by 200 pixels." and parsed.source_type == "image"
    assert reader.shapes == [(200, 320, 3)]
    assert parsed.page_spans[0].page == 1 and parsed.metadata["format"] == kind


def test_a_multi_page_tiff_is_a_document_of_pages_with_progress() -> None:
    pages = [Image.new("L", (100 + n, 80), 255) for n in range(3)]
    data = encoded(pages[0], "TIFF", save_all=True, append_images=pages[1:])
    progress: list[tuple[int, int]] = []
    parsed = parse_file(
        data, "scan.tiff", ocr=FakeReader(), on_progress=lambda done, total: progress.append((done, total))
    )
    assert [span.page for span in parsed.page_spans] == [1, 2, 3]
    assert parsed.text.split("\n\n") == [f"Page of {100 + n} by 80 pixels." for n in range(3)]
    assert progress == [(0, 3), (1, 3), (2, 3), (3, 3)], "each page announced as it starts"


@pytest.mark.parametrize("kind", ["PNG", "JPEG"])
def test_a_picture_over_the_page_pixel_budget_is_read_shrunk(kind: str) -> None:
    reader = FakeReader()
    budget = ParseBudget(ocr_max_page_pixels=1_000_000)
    parse_file(encoded(Image.new("RGB", (3000, 2000), "white"), kind), "big." + kind.lower(), budget=budget, ocr=reader)
    height, width, _ = reader.shapes[0]
    assert height * width <= 1_000_000 and abs(width / height - 1.5) < 0.01


def test_transparency_is_read_on_white() -> None:
    reader = FakeReader()
    parse_file(encoded(Image.new("RGBA", (64, 64), (0, 0, 0, 0)), "PNG"), "logo.png", ocr=reader)
    assert reader.corners == [255 * 3]


def test_a_picture_over_the_image_budget_is_413_before_decoding() -> None:
    data = encoded(Image.new("L", (2000, 1500), 255), "PNG")
    with pytest.raises(PayloadTooLarge, match=r"is 2,000 × 1,500 pixels; the limit is 1,000,000 \(MAX_IMAGE_PIXELS\)"):
        parse_file(data, "wide.png", budget=ParseBudget(max_image_pixels=1_000_000), ocr=FakeReader())


def test_without_ocr_a_picture_is_refused_and_a_damaged_one_is_400() -> None:
    data = encoded(Image.new("RGB", (50, 50), "white"), "PNG")
    with pytest.raises(NoExtractableText, match="OCR_ENABLED"):
        parse_file(data, "scan.png")
    with pytest.raises(InvalidInput, match="not a readable image"):
        parse_file(b"\x89PNG\r\n\x1a\nnot really", "broken.png", ocr=FakeReader())
    with pytest.raises(InvalidInput, match="cannot be decoded"):
        parse_file(data[: len(data) // 2], "cut.png", ocr=FakeReader())


@pytest.mark.slow
@pytest.mark.skipif(not ocr_available(), reason="rapidocr-onnxruntime is not installed")
@pytest.mark.parametrize("kind", ["PNG", "JPEG"])
def test_a_scanned_memo_is_read_by_the_real_engine(kind: str) -> None:
    import pymupdf

    with pymupdf.open(REAL / "fake-memo.pdf") as document:
        pixmap = document[0].get_pixmap(dpi=150)
    picture = Image.fromarray(np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.height, pixmap.width, pixmap.n))
    parsed = parse_file(encoded(picture.convert("RGB"), kind), "memo." + kind.lower(), ocr=reader_for(True))
    assert "20,000 bottles of water" in parsed.text.replace("20.000", "20,000")

"""Drawing a PDF page with rectangles tinted (`page_drawing.py`): within the pixel budget, the tint where
the text is on a rotated page too, refusals for a page that does not exist or holds a too large image."""

from __future__ import annotations

import dataclasses

import pymupdf
import pytest

from carrag.services.errors import NotFound, PayloadTooLarge
from carrag.services.page_drawing import draw_page, fitting_zoom
from carrag.services.parsers.budget import DEFAULT_BUDGET
from tests.api.page_pixels import pixels, tinted

FIRST_LINE = (30, 49, 170, 63)  # the first line's rectangle, unrotated, as its chunk's regions store it


def two_lines(rotation: int) -> bytes:
    with pymupdf.open() as document:
        page = document.new_page(width=300, height=400)
        page.insert_text((30, 60), "Rotated page text line one here", fontsize=10)
        page.insert_text((30, 200), "Another line lower down the page", fontsize=10)
        page.set_rotation(rotation)
        return document.tobytes()


def box(mask) -> tuple[int, int, int, int]:
    ys, xs = mask.nonzero()
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


@pytest.mark.parametrize("rotation", [0, 90, 270])
def test_the_tint_is_where_the_text_is_drawn(rotation: int) -> None:
    drawn = draw_page(two_lines(rotation), "r.pdf", 1, [FIRST_LINE], [], 400_000, DEFAULT_BUDGET)
    assert drawn.width * drawn.height <= 400_000 and drawn.page_count == 1
    assert (drawn.page_width, drawn.page_height) == ((300, 400) if rotation == 0 else (400, 300))
    plain = draw_page(two_lines(rotation), "r.pdf", 1, [], [], 400_000, DEFAULT_BUDGET)
    dark = pixels(plain.png).sum(axis=2) < 300  # the glyphs, from the page drawn without a tint
    tint = tinted(pixels(drawn.png))
    assert not tinted(pixels(plain.png)).any()
    x0, y0, x1, y1 = box(tint)
    assert (x1 - x0) * (y1 - y0) < 0.1 * tint.size, "one line, not the page"
    inside = int(dark[y0 : y1 + 1, x0 : x1 + 1].sum())
    assert inside > 50, "the first line's glyphs lie within the tint"
    assert dark.sum() - inside > 0.5 * inside, "the other line's lie outside it"


def test_the_budget_holds_whatever_the_page_size() -> None:
    for width, height, budget in [(612, 792, 2_000_000), (14_400, 200, 100_000), (3, 3, 100_000)]:
        zoom = fitting_zoom(width, height, budget)
        assert (width * zoom + 1) * (height * zoom + 1) <= budget * 1.0001


def test_refusals() -> None:
    with pytest.raises(NotFound, match="has 1 pages; there is no page 2"):
        draw_page(two_lines(0), "r.pdf", 2, [], [], 400_000, DEFAULT_BUDGET)
    with pymupdf.open() as document:
        page = document.new_page()
        page.insert_image(page.rect, pixmap=pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 400, 300), False))
        big = document.tobytes()
    small = dataclasses.replace(DEFAULT_BUDGET, max_image_pixels=100_000)
    with pytest.raises(PayloadTooLarge, match="MAX_IMAGE_PIXELS"):
        draw_page(big, "big.pdf", 1, [], [], 400_000, small)

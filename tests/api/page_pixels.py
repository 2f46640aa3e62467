"""Reading a page picture's marks back (GET /documents/{id}/pages/{n}/image): which pixels the chunk's
yellow and the highlights' orange tinted, inside and outside rectangles given in PDF points."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from PIL import Image

Rect = Sequence[float]


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def _blue_share(image: np.ndarray) -> np.ndarray:
    """Blue against red: 1 on white and grey; the page is multiplied by the tint, so a tinted pixel keeps
    the tint's share whatever its grey (yellow 0.55, orange 0.27)."""
    return image[..., 2] / np.maximum(image[..., 0], 1)


def tinted(image: np.ndarray) -> np.ndarray:
    """Pixels marked yellow or orange (too dark ones, the text, say nothing)."""
    return (image[..., 0] > 80) & (_blue_share(image) < 0.75)


def orange(image: np.ndarray) -> np.ndarray:
    return (image[..., 0] > 80) & (_blue_share(image) < 0.4)


def scale_of(image: np.ndarray, page_size: str) -> float:
    """Pixels per point, from the ``X-Page-Size`` header (``width x height`` in points)."""
    width = float(page_size.split("x")[0])
    return image.shape[1] / width


def share_inside(mask: np.ndarray, rects: Sequence[Rect], scale: float, inset: float = 1.5) -> float:
    """The share of the pixels inside ``rects`` (points, shrunk by ``inset``) that ``mask`` holds."""
    hit = total = 0
    for x0, y0, x1, y1 in rects:
        area = mask[
            round((y0 + inset) * scale) : round((y1 - inset) * scale),
            round((x0 + inset) * scale) : round((x1 - inset) * scale),
        ]
        hit, total = hit + int(area.sum()), total + area.size
    return hit / total if total else 0.0


def count_outside(mask: np.ndarray, rects: Sequence[Rect], scale: float, margin: float = 2.0) -> int:
    """How many pixels of ``mask`` lie outside every one of ``rects`` (grown by ``margin`` points)."""
    outside = mask.copy()
    for x0, y0, x1, y1 in rects:
        outside[
            max(round((y0 - margin) * scale), 0) : round((y1 + margin) * scale),
            max(round((x0 - margin) * scale), 0) : round((x1 + margin) * scale),
        ] = False
    return int(outside.sum())

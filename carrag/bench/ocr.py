"""`carrag bench`, OCR row: pages/s of the OCR reader on scanned copies (images only, no text layer) of a
PDF's first pages, through `parse_file`; quality is token F1 against the original text layer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from carrag.bench.html_extraction import token_f1, tokens
from carrag.services.parsers import parse_file
from carrag.services.parsers.pdf_ocr import _engine, ocr_available, reader_for
from carrag.services.settings import Settings

SCAN_DPI = 200


def scanned_copy(data: bytes, pages: int, dpi: int = SCAN_DPI) -> tuple[bytes, str]:
    """An image-only PDF of the first ``pages`` pages of ``data``, and those pages' original text."""
    import pymupdf

    with pymupdf.open(stream=data, filetype="pdf") as source, pymupdf.open() as scan:
        texts = []
        for page in list(source)[:pages]:
            texts.append(page.get_text())
            image = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
            scanned = scan.new_page(width=page.rect.width, height=page.rect.height)
            scanned.insert_image(scanned.rect, pixmap=image)
        return scan.tobytes(garbage=3, deflate=True), "\n".join(texts)


def bench_ocr(path: Path, settings: Settings, pages: int) -> dict[str, Any]:
    if not ocr_available():
        return {"skipped": "rapidocr-onnxruntime is not installed"}
    scan, original = scanned_copy(path.read_bytes(), pages)
    reader = reader_for(True, settings.ocr_dpi)
    _engine()  # loading the models is not reading time
    started = time.perf_counter()
    parsed = parse_file(scan, f"scanned-{path.name}", ocr=reader)
    seconds = time.perf_counter() - started
    done = min(pages, int(parsed.metadata.get("total_pages") or pages))
    return {
        "file": str(path),
        "pages": done,
        "ocr_pages": len(parsed.metadata.get("ocr_pages", [])),
        "seconds": round(seconds, 2),
        "pages_per_second": round(done / seconds, 3),
        "token_f1": round(token_f1(tokens(parsed.text), tokens(original)), 3),
        "dpi": settings.ocr_dpi,
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m carrag.bench.ocr PDF [--pages N]``: the OCR row of `carrag bench` alone, as JSON."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description="OCR pages/s and token F1 on scanned copies of a PDF's pages.")
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--pages", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(bench_ocr(args.pdf, Settings(), args.pages), indent=2))


if __name__ == "__main__":
    main()

"""What locating PDF text on its pages (issue 28 part 2) costs at parse time (docs/benchmarks.md).

Usage: python scripts/pdf_positions_cost.py PDF [--rounds 3]

Parses and chunks PDF (text mode, 500/50 recursive) with positions, then the same parse with the
positions steps skipped (the page's blocks read without their words, no locating), alternating, and
prints the median of each, their ratio, and the regions kept per chunk. The text must be the same.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from carrag.services.chunking import chunk_document
from carrag.services.parsers import parse_file
from carrag.services.parsers import pdf as pdf_parser

WITH_POSITIONS = (pdf_parser.page_blocks, pdf_parser.page_positions)


def blocks_alone(page: Any) -> list[pdf_parser.TextSpan]:
    return [
        pdf_parser.TextSpan(b[4], (b[0], b[1], b[2], b[3])) for b in page.get_text("blocks", sort=False) if b[6] == 0
    ]


def timed(data: bytes, name: str, positions: bool) -> tuple[float, Any, list[Any]]:
    pdf_parser.page_blocks, pdf_parser.page_positions = WITH_POSITIONS if positions else (blocks_alone, lambda *_: None)
    started = time.perf_counter()
    parsed = parse_file(data, name)
    chunks = chunk_document(parsed, "recursive", 500, 50)
    return time.perf_counter() - started, parsed, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pdf", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    data = arguments.pdf.read_bytes()
    timed(data, arguments.pdf.name, True)  # imports and the layout model's load are not parse time
    with_positions, without = [], []
    for _ in range(arguments.rounds):
        seconds, parsed, chunks = timed(data, arguments.pdf.name, True)
        plain_seconds, plain, _ = timed(data, arguments.pdf.name, False)
        assert parsed.text == plain.text, "positions changed the text"
        with_positions.append(seconds)
        without.append(plain_seconds)
    ratios = [a / b for a, b in zip(with_positions, without, strict=True)]
    print(
        f"{arguments.pdf.name}: {len(parsed.page_spans)} pages, {len(chunks)} chunks; parse+chunk with positions "
        f"{statistics.median(with_positions):.2f} s, without {statistics.median(without):.2f} s, "
        f"ratio {statistics.median(ratios):.2f}; regions per chunk: median "
        f"{statistics.median(len(c.regions) for c in chunks):.0f}, max {max(len(c.regions) for c in chunks)}, "
        f"chunks without {sum(1 for c in chunks if not c.regions)}"
    )


if __name__ == "__main__":
    main()

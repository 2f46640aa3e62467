"""What PDF text hygiene does to a folder of PDFs: line-break hyphens joined, garbage spans dropped,
pages whose text is mostly garbage (no OCR here: ``ocr=None``).

    python -m carrag.bench.pdf_hygiene ../shared/data/corpus/pdf/docling ../shared/data/corpus/pdf/unstructured
"""

from __future__ import annotations

import argparse
from pathlib import Path

from carrag.services.errors import CarragError
from carrag.services.parsers import parse_file
from carrag.services.parsers.budget import ParseBudget


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--max-pages", type=int, default=100, help="skip longer PDFs")
    args = parser.parse_args(argv)
    print("| file | pages | hyphen joins | garbage spans dropped | garbage pages |")
    print("|---|---|---|---|---|")
    totals = [0, 0, 0, 0]
    for path in sorted(pdf for folder in args.folders for pdf in folder.glob("*.pdf")):
        try:
            metadata = parse_file(
                path.read_bytes(), path.name, budget=ParseBudget(max_pdf_pages=args.max_pages)
            ).metadata
        except CarragError as exc:
            print(f"| {path.name} | {exc.message[:60]} | | | |")
            continue
        row = [
            metadata["total_pages"],
            metadata["hyphen_joins"],
            metadata["garbage_spans_dropped"],
            len(metadata["garbage_pages"]),
        ]
        totals = [total + value for total, value in zip(totals, row, strict=True)]
        if any(row[1:]):
            print(f"| {path.name} | {row[0]} | {row[1]} | {row[2]} | {metadata['garbage_pages'] or ''} |")
    print(f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} |")


if __name__ == "__main__":
    main()

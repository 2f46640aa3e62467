"""How close Carrag's HTML → Markdown conversion comes to reference conversions, against the
alternatives it was chosen over.

    .venv/bin/python scripts/html_conversion_quality.py [/work/shared/data/corpus/html/docling]

The folder holds ``<name>.html`` files and ``groundtruth/<name>.html.md`` reference conversions
(docling's test set). Printed per converter, averaged over the files: token F1 (bag of lower-cased
words, so it measures what a search index sees) and token sequence similarity (difflib ratio over
the word sequence, so order and duplication count), and the total time.

Converters: ``carrag`` (carrag/services/parsers/html_markdown.py), plain markdownify, and trafilatura's
Markdown output in its default and favour-recall modes (when trafilatura is installed: it is no longer
a dependency of Carrag).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_FOLDER = Path("/work/shared/data/corpus/html/docling")


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def token_f1(predicted: str, reference: str) -> float:
    p, r = Counter(tokens(predicted)), Counter(tokens(reference))
    common = sum((p & r).values())
    if not common:
        return 0.0
    precision, recall = common / sum(p.values()), common / sum(r.values())
    return 2 * precision * recall / (precision + recall)


def sequence_similarity(predicted: str, reference: str) -> float:
    return difflib.SequenceMatcher(None, tokens(predicted), tokens(reference), autojunk=False).ratio()


def converters() -> dict[str, Callable[[bytes], str]]:
    import importlib.util

    import markdownify
    from bs4 import BeautifulSoup

    from carrag.services.parsers.html_markdown import parse_html

    def plain_markdownify(data: bytes) -> str:
        soup = BeautifulSoup(data, "lxml")
        for tag in soup(["script", "style"]):
            tag.decompose()
        return markdownify.MarkdownConverter(heading_style="ATX").convert_soup(soup)

    def trafilatura_markdown(favor_recall: bool) -> Callable[[bytes], str]:
        def convert(data: bytes) -> str:
            import trafilatura

            html = data.decode("utf-8", errors="replace")
            return (
                trafilatura.extract(
                    html,
                    output_format="markdown",
                    include_tables=True,
                    include_formatting=True,
                    favor_recall=favor_recall,
                )
                or ""
            )

        return convert

    found: dict[str, Callable[[bytes], str]] = {
        "carrag": lambda data: parse_html(data, "page.html").text,
        "markdownify": plain_markdownify,
    }
    if importlib.util.find_spec("trafilatura") is not None:
        found |= {"trafilatura": trafilatura_markdown(False), "trafilatura-recall": trafilatura_markdown(True)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    folder = parser.parse_args().folder
    pairs = [
        (source, reference)
        for reference in sorted((folder / "groundtruth").glob("*.html.md"))
        if (source := folder / reference.name.removesuffix(".md")).exists()
    ]
    if not pairs:
        raise SystemExit(f"no <name>.html with groundtruth/<name>.html.md under {folder}")
    print(f"{len(pairs)} files under {folder}")
    print(f"{'converter':20s} {'token F1':>9s} {'sequence':>9s} {'time':>8s}")
    for name, convert in converters().items():
        f1_total = similarity_total = elapsed = 0.0
        for source, reference in pairs:
            data, expected = source.read_bytes(), reference.read_text()
            started = time.perf_counter()
            try:
                output = convert(data)
            except Exception:  # noqa: BLE001 - a converter that refuses the file scores zero on it
                output = ""
            elapsed += time.perf_counter() - started
            f1_total += token_f1(output, expected)
            similarity_total += sequence_similarity(output, expected)
        print(f"{name:20s} {f1_total / len(pairs):9.3f} {similarity_total / len(pairs):9.3f} {elapsed:7.2f}s")


if __name__ == "__main__":
    main()

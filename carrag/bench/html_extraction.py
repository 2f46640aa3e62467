"""How much of an HTML page ingestion keeps is content, and how much is site chrome.

    python -m carrag.bench.html_extraction [--data ../shared/data] [--grid]

The hand-marked pages of `html_references/` (split into ``tuning``, ``measuring`` and ``unseen``) are
parsed and chunked as the pipeline would: ``boilerplate`` is the share of chunks holding a marked chrome
line, ``F1`` the token F1 against the marked content.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from carrag.services.chunking import chunk_document, default_strategy
from carrag.services.errors import CarragError
from carrag.services.models import ParsedDocument
from carrag.services.parsers import parse_file
from carrag.services.settings import Settings

REFERENCES = Path(__file__).parent / "html_references"

_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_f1(predicted: list[str], expected: list[str]) -> float:
    if not predicted or not expected:
        return float(predicted == expected)
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


_MARKUP_PREFIX = re.compile(r"^[\s>*+|:\-]+")
_EMPHASIS = re.compile(r"[*_`\\]")


def normalised_line(line: str) -> str:
    """A line as compared with the marked chrome: without list/table/emphasis markup, case and spacing."""
    line = _EMPHASIS.sub("", _MARKUP_PREFIX.sub("", line)).strip().strip("|").strip()
    return " ".join(line.lower().split())


@dataclass(slots=True)
class ReferencePage:
    name: str
    page: str  # path under the data folder
    part: str  # "tuning", "measuring" or "unseen"
    content: str
    chrome_lines: set[str]
    chrome_marks: list[str]
    chrome_patterns: list[re.Pattern[str]]


def load_references(folder: Path = REFERENCES) -> list[ReferencePage]:
    pages = []
    for entry in json.loads((folder / "pages.json").read_text(encoding="utf-8")):
        content = (folder / f"{entry['name']}.md").read_text(encoding="utf-8")
        entries = (folder / f"{entry['name']}.chrome").read_text(encoding="utf-8").splitlines()
        content_lines = {normalised_line(line) for line in content.splitlines()}
        lines = {normalised_line(e) for e in entries if e.strip() and not e.startswith("~")} - content_lines - {""}
        marks = [e[2:] for e in entries if e.startswith("~ ")]
        patterns = [re.compile(e[3:]) for e in entries if e.startswith("~/ ")]
        pages.append(ReferencePage(entry["name"], entry["page"], entry["part"], content, lines, marks, patterns))
    return pages


@dataclass(slots=True)
class ChromeScore:
    name: str
    part: str
    chunks: int
    chrome_chunks: int
    f1: float
    examples: list[str]  # the first chrome lines found, for reading
    parse_seconds: float = 0.0
    page_bytes: int = 0


def holds_chrome(text: str, lines: list[str], page: ReferencePage) -> str | None:
    """The first chrome mark in ``text`` or chrome line among ``lines`` (the whole lines of the
    document that the chunk touches, as a chunk may begin in the middle of one), else None."""
    for mark in page.chrome_marks:
        if mark in text:
            return mark
    for line in lines:
        if normalised_line(line) in page.chrome_lines or any(p.search(line) for p in page.chrome_patterns):
            return line
    return None


def touched_lines(text: str, start: int, end: int) -> list[str]:
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return text[first : len(text) if last == -1 else last].splitlines()


def score_reference(page: ReferencePage, parsed: ParsedDocument, settings: Settings) -> ChromeScore:
    strategy = default_strategy(parsed, settings.chunking_strategy)  # as when the request names none
    chunks = chunk_document(parsed, strategy, settings.chunk_size, settings.chunk_overlap)
    found = [
        line
        for chunk in chunks
        if (line := holds_chrome(chunk.text, touched_lines(parsed.text, chunk.char_start, chunk.char_end), page))
        is not None
    ]
    f1 = token_f1(tokens(parsed.text), tokens(page.content))
    return ChromeScore(page.name, page.part, len(chunks), len(found), round(f1, 3), found[:3])


def run_references(data: Path, settings: Settings, folder: Path = REFERENCES) -> list[ChromeScore]:
    scores = []
    for page in load_references(folder):
        if page.page.startswith("pages/"):  # kept beside the references, compressed
            path = folder / page.page
            data_bytes = gzip.decompress(path.read_bytes())
        else:
            path = data / page.page
            data_bytes = path.read_bytes()
        started = time.perf_counter()
        try:
            parsed = parse_file(data_bytes, page.name)
        except CarragError:
            parsed = ParsedDocument(text="", filename=path.name, source_type="html")
        score = score_reference(page, parsed, settings)
        score.parse_seconds, score.page_bytes = time.perf_counter() - started, len(data_bytes)
        scores.append(score)
    return scores


def chrome_summary(scores: list[ChromeScore]) -> dict[str, float | int]:
    chunks = sum(score.chunks for score in scores)
    chrome = sum(score.chrome_chunks for score in scores)
    return {
        "pages": len(scores),
        "chunks": chunks,
        "chrome_chunks": chrome,
        "boilerplate_share": round(chrome / max(chunks, 1), 4),
        "mean_f1": round(sum(score.f1 for score in scores) / max(len(scores), 1), 3),
    }


def print_references(scores: list[ChromeScore]) -> None:
    print("| page | part | chunks | chunks with chrome | content F1 | first chrome found |")
    print("|---|---|---|---|---|---|")
    for score in scores:
        shown = "; ".join(line.strip()[:40] for line in score.examples)
        print(f"| {score.name} | {score.part} | {score.chunks} | {score.chrome_chunks} | {score.f1:.3f} | {shown} |")
    print("\n| part | pages | chunks | chunks with chrome | boilerplate share | mean content F1 |")
    print("|---|---|---|---|---|---|")
    for part in ("tuning", "measuring", "unseen", "all"):
        rows = [score for score in scores if part in ("all", score.part)]
        s = chrome_summary(rows)
        print(
            f"| {part} | {s['pages']} | {s['chunks']} | {s['chrome_chunks']} | {s['boilerplate_share']:.2%} "
            f"| {s['mean_f1']} |"
        )
    seconds = sum(score.parse_seconds for score in scores)
    megabytes = sum(score.page_bytes for score in scores) / 1e6
    print(f"\nparsing the {len(scores)} pages ({megabytes:.2f} MB): {seconds:.2f} s")


def print_grid(data: Path, settings: Settings) -> None:
    """Chrome left and content F1 per part for other values of the two thresholds of `html_chrome`."""
    from carrag.services.parsers import html_chrome

    fitted = html_chrome.ROOT_SHARE, html_chrome.LINK_DENSITY
    print("| ROOT_SHARE | LINK_DENSITY | tuning: chunks with chrome, F1 | measuring | unseen |")
    print("|---|---|---|---|---|")
    try:
        for root_share in (0.6, 0.7, 0.8, 0.9, 1.01):
            for density in (0.4, 0.5, 0.6, 0.7, 0.8):
                html_chrome.ROOT_SHARE, html_chrome.LINK_DENSITY = root_share, density
                scores = run_references(data, settings)
                cells = []
                for part in ("tuning", "measuring", "unseen"):
                    s = chrome_summary([score for score in scores if score.part == part])
                    cells.append(f"{s['chrome_chunks']}, {s['mean_f1']}")
                print(f"| {root_share} | {density} | " + " | ".join(cells) + " |")
    finally:
        html_chrome.ROOT_SHARE, html_chrome.LINK_DENSITY = fitted


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="where the referenced pages are")
    parser.add_argument("--json", type=Path, help="also write the per-page scores here")
    parser.add_argument("--grid", action="store_true", help="the references under other chrome thresholds")
    args = parser.parse_args(argv)
    if args.grid:
        print_grid(args.data, Settings())
        return
    scores = run_references(args.data, Settings())
    print_references(scores)
    if args.json:
        args.json.write_text(json.dumps([asdict(score) for score in scores], indent=2))


if __name__ == "__main__":
    main()

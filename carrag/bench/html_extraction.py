"""How much of an HTML page ingestion keeps is content, and how much is site chrome.

    python -m carrag.bench.html_extraction [--data ../shared/data] [--grid]
    python -m carrag.bench.html_extraction ../shared/data/corpus/html/docling

By default, the hand-marked pages of `html_references/` (split into ``tuning`` and ``measuring``) are
parsed and chunked as the pipeline would: ``boilerplate`` is the share of chunks holding a marked chrome
line, ``F1`` the token F1 against the marked content. With a folder of docling references, both the
upload and URL parsers are scored by token F1 against the whole page and its content lines (the
reference without link-dominated lines), and boilerplate is the share of chunks mostly outside them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from carrag.services.chunking import chunk_document
from carrag.services.chunking import default_strategy as pipeline_strategy
from carrag.services.errors import CarragError
from carrag.services.models import ParsedDocument
from carrag.services.parsers import parse_file
from carrag.services.parsers.web import parse_web_page
from carrag.services.settings import Settings
from carrag.services.vocabulary import ChunkingStrategy

REFERENCES = Path(__file__).parent / "html_references"

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_IMAGE_MARKER = re.compile(r"<!--.*?-->")
_TOKEN = re.compile(r"\w+")
_MARKUP = re.compile(r"^[\s>|\-*+#]*(\[[ xX]\]\s*)?")
LINK_DOMINATED = 0.5  # share of a line's visible characters that are link text
CONTENT_SHARE = 0.5  # a chunk with a smaller share of content tokens is boilerplate


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def visible(line: str) -> str:
    return _LINK.sub(r"\1", _IMAGE_MARKER.sub("", line))


def is_link_dominated(line: str) -> bool:
    body = _MARKUP.sub("", _IMAGE_MARKER.sub("", line))
    shown = len("".join(tokens(visible(body))))
    if not shown:
        return False
    linked = sum(len("".join(tokens(match.group(1)))) for match in _LINK.finditer(body))
    return linked / shown >= LINK_DOMINATED


def content_lines(reference: str) -> list[str]:
    return [visible(line) for line in reference.splitlines() if line.strip() and not is_link_dominated(line)]


def token_f1(predicted: list[str], expected: list[str]) -> float:
    if not predicted or not expected:
        return float(predicted == expected)
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def default_strategy(parsed: ParsedDocument, settings: Settings) -> ChunkingStrategy:
    """The strategy the pipeline picks when the request names none."""
    return pipeline_strategy(parsed, settings.chunking_strategy)


@dataclass(slots=True)
class PageScore:
    name: str
    path: str
    chrome_removed: float  # share of the page's text removed as chrome
    f1_page: float
    f1_content: float | None
    chunks: int
    boilerplate_chunks: int
    content_line_count: int


def score_page(name: str, path: str, parsed: ParsedDocument, reference: str, settings: Settings) -> PageScore:
    lines = content_lines(reference)
    content_tokens = [token for line in lines for token in tokens(line)]
    content_vocabulary = set(content_tokens)
    size = settings.chunk_size
    chunks = chunk_document(parsed, default_strategy(parsed, settings), size, settings.chunk_overlap)
    boilerplate = 0
    for chunk in chunks:
        chunk_tokens = tokens(chunk.text)
        inside = sum(token in content_vocabulary for token in chunk_tokens)
        if chunk_tokens and inside / len(chunk_tokens) < CONTENT_SHARE:
            boilerplate += 1
    extracted = tokens(parsed.text)
    return PageScore(
        name=name,
        path=path,
        chrome_removed=float(parsed.metadata.get("chrome_removed_share", 0.0)),
        f1_page=token_f1(extracted, tokens(visible(reference))),
        f1_content=token_f1(extracted, content_tokens) if content_tokens else None,
        chunks=len(chunks),
        boilerplate_chunks=boilerplate,
        content_line_count=len(lines),
    )


PATHS: dict[str, Callable[[bytes, str], ParsedDocument]] = {
    "upload": lambda data, name: parse_file(data, name),
    "url": lambda data, name: parse_web_page(data.decode("utf-8", errors="replace"), f"https://example.org/{name}"),
}


def run(corpus: Path, settings: Settings) -> list[PageScore]:
    scores: list[PageScore] = []
    for reference_path in sorted((corpus / "groundtruth").glob("*.html.md")):
        page = corpus / reference_path.name.removesuffix(".md")
        if not page.exists():
            continue
        reference = reference_path.read_text(encoding="utf-8")
        for path, parse in PATHS.items():
            try:
                parsed = parse(page.read_bytes(), page.name)
            except CarragError:  # a page that yields no text scores zero
                parsed = ParsedDocument(text="", filename=page.name, source_type="html")
            scores.append(score_page(page.name, path, parsed, reference, settings))
    return scores


def summary(scores: list[PageScore], path: str) -> dict[str, float | int]:
    rows = [score for score in scores if score.path == path]
    with_content = [score.f1_content for score in rows if score.f1_content is not None]
    chunks = sum(score.chunks for score in rows)
    return {
        "pages": len(rows),
        "f1_page": round(sum(score.f1_page for score in rows) / len(rows), 3),
        "f1_content": round(sum(with_content) / len(with_content), 3),
        "chunks": chunks,
        "boilerplate_chunks": sum(score.boilerplate_chunks for score in rows),
        "boilerplate_share": round(sum(score.boilerplate_chunks for score in rows) / max(chunks, 1), 3),
    }


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
    part: str  # "tuning" or "measuring"
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
    chunks = chunk_document(parsed, default_strategy(parsed, settings), settings.chunk_size, settings.chunk_overlap)
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
    parser.add_argument(
        "corpus", type=Path, nargs="?", help="a folder of .html files with groundtruth/<name>.html.md (docling)"
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="where the referenced pages are")
    parser.add_argument("--json", type=Path, help="also write the per-page scores here")
    parser.add_argument("--grid", action="store_true", help="the references under other chrome thresholds")
    args = parser.parse_args(argv)
    if args.grid:
        print_grid(args.data, Settings())
        return
    if args.corpus is None:
        chrome_scores = run_references(args.data, Settings())
        print_references(chrome_scores)
        if args.json:
            args.json.write_text(json.dumps([_as_dict(score) for score in chrome_scores], indent=2))
        return
    scores = run(args.corpus, Settings())
    print("| path | pages | mean F1 (page) | mean F1 (content) | chunks | boilerplate chunks | share |")
    print("|---|---|---|---|---|---|---|")
    for path in PATHS:
        s = summary(scores, path)
        print(
            f"| {path} | {s['pages']} | {s['f1_page']} | {s['f1_content']} | {s['chunks']} "
            f"| {s['boilerplate_chunks']} | {s['boilerplate_share']} |"
        )
    print("\n| page | path | chrome removed | F1 (page) | F1 (content) | chunks | boilerplate chunks |")
    print("|---|---|---|---|---|---|---|")
    for score in scores:
        if score.content_line_count > 10:
            content = "-" if score.f1_content is None else f"{score.f1_content:.3f}"
            print(
                f"| {score.name} | {score.path} | {score.chrome_removed:.1%} | {score.f1_page:.3f} | {content} "
                f"| {score.chunks} | {score.boilerplate_chunks} |"
            )
    if args.json:
        args.json.write_text(json.dumps([_as_dict(score) for score in scores], indent=2))


def _as_dict(score: PageScore | ChromeScore) -> dict[str, object]:
    return {name: getattr(score, name) for name in type(score).__slots__}


if __name__ == "__main__":
    main()

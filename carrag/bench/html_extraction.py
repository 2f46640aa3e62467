"""How much of an HTML page ingestion keeps is article, and how much is boilerplate.

    python -m carrag.bench.html_extraction ../shared/data/corpus/html/docling

For every ``X.html`` with a reference conversion ``groundtruth/X.html.md`` (docling's whole-page
Markdown), both ingestion paths are run: the upload parser (`parse_file`) and the URL parser
(`parse_web_page`), each followed by the chunking the pipeline would use by default. Reported:

- ``f1_page``: token F1 of the extracted text against the whole reference page.
- ``f1_content``: token F1 against the reference's *content lines*: the reference without its
  link-dominated lines (at least half of a line's visible text is link text — menus, tables of
  contents, language lists, category lists; the link-density rule of boilerplate detection).
- ``boilerplate``: the share of chunks of which fewer than half the tokens occur in the content
  lines (navigation the reference kept, or text it dropped, such as "Jump to content").

Tokens are lower-cased ``\\w+`` runs; link targets and image markers are removed from the reference
first (they are not visible text). The numbers are micro-averaged over all pages, and printed per
page for the pages with more than ten content lines.
"""

from __future__ import annotations

import argparse
import json
import re
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
    extraction: str
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
        extraction=str(parsed.metadata.get("extraction", "-")),
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a folder of .html files with groundtruth/<name>.html.md")
    parser.add_argument("--json", type=Path, help="also write the per-page scores here")
    args = parser.parse_args(argv)
    scores = run(args.corpus, Settings())
    print("| path | pages | mean F1 (page) | mean F1 (content) | chunks | boilerplate chunks | share |")
    print("|---|---|---|---|---|---|---|")
    for path in PATHS:
        s = summary(scores, path)
        print(
            f"| {path} | {s['pages']} | {s['f1_page']} | {s['f1_content']} | {s['chunks']} "
            f"| {s['boilerplate_chunks']} | {s['boilerplate_share']} |"
        )
    print("\n| page | path | extraction | F1 (page) | F1 (content) | chunks | boilerplate chunks |")
    print("|---|---|---|---|---|---|---|")
    for score in scores:
        if score.content_line_count > 10:
            content = "-" if score.f1_content is None else f"{score.f1_content:.3f}"
            print(
                f"| {score.name} | {score.path} | {score.extraction} | {score.f1_page:.3f} | {content} "
                f"| {score.chunks} | {score.boilerplate_chunks} |"
            )
    if args.json:
        args.json.write_text(json.dumps([_as_dict(score) for score in scores], indent=2))


def _as_dict(score: PageScore) -> dict[str, object]:
    return {name: getattr(score, name) for name in PageScore.__slots__}


if __name__ == "__main__":
    main()

"""Automatic tags of the keyword tagger on 20 documents of the shared corpus, as a Markdown table.

    # tags of the current code, as JSON
    .venv/bin/python scripts/tag_quality.py /work/shared/data/corpus --json /tmp/tags-after.json
    # tags of another version of the code (a `carrag/` tree from `git archive <commit> carrag`)
    .venv/bin/python scripts/tag_quality.py /work/shared/data/corpus --code /tmp/carrag-before --json /tmp/tags-before.json
    # the table: document, tags before, tags after
    .venv/bin/python scripts/tag_quality.py --compare /tmp/tags-before.json /tmp/tags-after.json

Each document is parsed as an upload would be (`parse_file`) and tagged with `KeywordTagger` on
its first TAGGING_CONTENT_CHARS characters under its file name, as the ingestion pipeline does.
A document the code cannot parse shows the error instead of tags.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    "office/unstructured/category-level.docx",
    "office/unstructured/example-list-items-multiple.docx",
    "office/unstructured/handbook-1p.docx",
    "office/unstructured/sample-presentation.pptx",
    "pdf/docling/code_and_formula.pdf",
    "pdf/docling/picture_classification.pdf",
    "pdf/docling/2305.03393v1-pg9.pdf",
    "pdf/docling/redp5110_sampled.pdf",
    "pdf/unstructured/fr_olap.pdf",
    "pdf/unstructured/layout-parser-paper-fast.pdf",
    "pdf/unstructured/multi-column-2p.pdf",
    "pdf/unstructured/reliance.pdf",
    "pdf/unstructured/embedded-images.pdf",
    "html/docling/wiki_duck.html",
    "html/unstructured/fake-html-lang-de.html",
    "html/unstructured/example-10k-1p.html",
    "md/docling/wiki.md",
    "md/docling-docs/docs__concepts__chunking.md",
    "txt/unstructured/norwich-city.txt",
    "txt/unstructured/book-war-and-peace-1p.txt",
]


def tag_documents(corpus: Path, content_chars: int) -> dict[str, str]:
    from carrag.services.errors import CarragError
    from carrag.services.parsers import parse_file
    from carrag.services.tagging import KeywordTagger

    tagger = KeywordTagger(content_chars=content_chars)
    results: dict[str, str] = {}
    for name in DOCUMENTS:
        path = corpus / name
        try:
            parsed = parse_file(path.read_bytes(), path.name)
        except CarragError as exc:
            results[name] = f"(refused: {exc.message[:48]})"
            continue
        results[name] = ", ".join(tagger.tags_sync(parsed.text[:content_chars], parsed.filename)) or "(none)"
    return results


def noise_count(results: dict[str, str]) -> tuple[int, int]:
    """(tags made only of stop words of any language YAKE lists, or of filler words; all tags)."""
    from carrag.services.keyphrases import FILLER_WORDS, LOREM_WORDS, _stopword_dir, read_word_list

    every_stop = set(FILLER_WORDS | LOREM_WORDS)
    for path in _stopword_dir().glob("stopwords_*.txt"):
        every_stop.update(read_word_list(path))
    tags = [tag for value in results.values() if not value.startswith("(") for tag in value.split(", ")]
    return sum(all(word in every_stop for word in tag.split()) for tag in tags), len(tags)


def table(before: dict[str, str], after: dict[str, str]) -> str:
    rows = ["| document | tags before | tags after |", "|---|---|---|"]
    for name in DOCUMENTS:
        cells = [before.get(name, "-"), after.get(name, "-")]
        rows.append(f"| `{name}` | " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    (noisy_before, all_before), (noisy_after, all_after) = noise_count(before), noise_count(after)
    rows.append(
        f"\nTags made only of stop words (any of YAKE's 34 languages), lorem ipsum or filler words: "
        f"{noisy_before} of {all_before} before, {noisy_after} of {all_after} after."
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", type=Path, help="The shared corpus folder (data/corpus).")
    parser.add_argument("--code", type=Path, default=REPOSITORY, help="Folder holding the `carrag` package to use.")
    parser.add_argument("--json", type=Path, help="Write {document: tags} here.")
    parser.add_argument("--content-chars", type=int, default=8000, help="TAGGING_CONTENT_CHARS (default 8000).")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="Print the table.")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        print(table(before, after))
        return
    if args.corpus is None:
        parser.error("give the corpus folder, or --compare BEFORE AFTER")
    sys.path.insert(0, str(args.code.resolve()))
    started = time.perf_counter()
    results = tag_documents(args.corpus, args.content_chars)
    for name, tags in results.items():
        print(f"{name}: {tags}")
    print(f"{len(results)} documents in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

from __future__ import annotations

import gzip
import json
from pathlib import Path

from carrag.bench.html_extraction import (
    chrome_summary,
    load_references,
    normalised_line,
    run_references,
    token_f1,
)
from carrag.services.settings import Settings


def test_token_f1() -> None:
    assert token_f1(["a", "b"], ["a", "b"]) == 1.0
    assert token_f1(["a", "x"], ["a", "b"]) == 0.5
    assert token_f1([], ["a"]) == 0.0


def test_chrome_lines_are_compared_without_markup_but_headings_keep_their_hashes() -> None:
    assert normalised_line("- **Report a Bug**") == normalised_line("| Report a bug |") == "report a bug"
    assert normalised_line("## 8.1. dpkg") != normalised_line(":   8.1. dpkg")


def test_the_committed_references_are_complete() -> None:
    pages = load_references()
    assert len(pages) >= 10 and {"tuning", "measuring"} <= {page.part for page in pages}
    for page in pages:
        assert page.content.strip() and page.name.endswith(".html")
        assert not page.chrome_lines & {normalised_line(line) for line in page.content.splitlines()}


def test_a_page_is_scored_against_its_marked_chrome(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    html = (
        b"<html><body><div role='navigation'><a href='a.html'>Home</a> | <a href='b.html'>Next</a></div>"
        b"<h1>Guide</h1><p>Install the package first.</p><p>Report a bug \xc2\xb6</p></body></html>"
    )
    (tmp_path / "pages" / "guide.html.gz").write_bytes(gzip.compress(html))
    (tmp_path / "pages.json").write_text(
        json.dumps([{"name": "guide.html", "page": "pages/guide.html.gz", "part": "measuring"}])
    )
    (tmp_path / "guide.html.md").write_text("# Guide\n\nInstall the package first.\n")
    (tmp_path / "guide.html.chrome").write_text("Home | Next\nReport a bug\n~ \u00b6\n")
    [score] = run_references(tmp_path, Settings(), tmp_path)
    assert (score.chunks, score.chrome_chunks) == (1, 1), "the navigation went; the paragraph with a pilcrow stayed"
    assert 0.7 < score.f1 < 1.0
    assert chrome_summary([score])["boilerplate_share"] == 1.0

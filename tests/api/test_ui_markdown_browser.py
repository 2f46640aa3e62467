"""Document text in the web UI as formatting, never as HTML (headless Chromium, see test_ui_browser.py).

1. The renderer (`/ui/markdown.js`) on its own, in the page's real DOM: Markdown becomes elements and
   text nodes; a document's HTML stays characters.
2. Against a real server (extractive answers, LLM=none): a Markdown document with bold, code, a table,
   a list, an `<img onerror>`, a `<script>` and a `javascript:` link. The answer, the source card, the
   opened passage and the document page show the formatting; nothing of the document runs or becomes
   an element it did not ask for in Markdown.
3. The chunk that matched is set apart in its widened passage, and on the document page the start a
   chunk shares with the one before (the overlap) is greyed, not read twice.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import ask, chromium, open_page
from carrag.bench.server import server_process
from tests.api.test_ui_browser import require_chromium

pytestmark = pytest.mark.browser

RENDER = """async ([text, spans]) => {
    const { markdownBlocks } = await import('/ui/markdown.js');
    const box = document.createElement('div');
    const marks = spans.map(([start, end]) => ({ start, end, wrap: (nodes) => {
        const mark = document.createElement('mark'); mark.append(...nodes); return mark; } }));
    const tokens = [{ pattern: /\\[Source (\\d+)\\]/g, render: (m) => {
        const link = document.createElement('a'); link.textContent = `[${m[1]}]`; return link; } }];
    box.append(...markdownBlocks(text, { spans: marks, tokens }));
    return box.innerHTML;
}"""
CASES = [
    (
        "Plain **bold**, *italic*, _also_, `code` and SQLITE\\_MAX\\_LENGTH; snake_case and __init__ stay.",
        "<p>Plain <strong>bold</strong>, <em>italic</em>, <em>also</em>, <code>code</code> and SQLITE_MAX_LENGTH; "
        "snake_case and __init__ stay.</p>",
    ),
    (
        "# Heading\n\nA paragraph\nwrapped.\n\n- one\n- two\n  continued\n\n3. three\n4. four",
        '<p class="md-heading">Heading</p><p>A paragraph\nwrapped.</p><ul><li>one</li><li>two\n  continued</li></ul>'
        '<ol start="3"><li>three</li><li>four</li></ol>',
    ),
    (
        "| Class | Meaning |\n|---|---|\n| **NULL** | a x \\| y<br>z |",
        '<div class="md-table"><table><thead><tr><th>Class</th><th>Meaning</th></tr></thead><tbody><tr>'
        "<td><strong>NULL</strong></td><td>a x | y<br>z</td></tr></tbody></table></div>",
    ),
    ("| a row | without header |", '<div class="md-table"><table><tbody><tr><td>a row</td><td>without header</td>'),
    ("```\n<script>x()</script>\n```\nafter", "<pre><code>&lt;script&gt;x()&lt;/script&gt;</code></pre><p>after</p>"),
    (
        '<img src=x onerror="window.__xss=1"> [go](javascript:alert(1)) [docs](https://example.com/a) ![logo](x.png)',
        '<p>&lt;img src=x onerror="window.__xss=1"&gt; <span class="md-link">go</span> '
        '<span class="md-link" title="https://example.com/a">docs</span> <span class="md-image">logo</span></p>',
    ),
    ("2 * 3 * 4 and ** spaced ** and *unclosed", "<p>2 * 3 * 4 and ** spaced ** and *unclosed</p>"),
    ("See **the filter** [Source 2].", "<p>See <strong>the filter</strong> <a>[2]</a>.</p>"),
]


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def test_the_renderer_builds_formatting_from_markdown_and_text_from_html(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none") as server:
        page = open_page(browser, server)
        for text, expected in CASES:
            html = page.evaluate(RENDER, [text, []])
            assert html.startswith(expected) if expected.endswith("</td>") else html == expected, (text, html)
        # Marked ranges (highlights, grounded sentences) wrap the formatted pieces they cover, per block.
        text = "Keep **the filter** clean.\n\n- second block"
        marked = page.evaluate(RENDER, [text, [[5, text.index("second") + 6]]])
        assert marked == (
            "<p>Keep <mark><strong>the filter</strong> clean.</mark></p><ul><li><mark>second</mark> block</li></ul>"
        )
        assert page.evaluate("window.__xss") is None


HOSTILE = """# Storage classes

Each value stored in the database has one of the following **storage classes**: `NULL`, `INTEGER` and `TEXT`.

| Class | Meaning |
|---|---|
| **NULL** | The value is a NULL value. |
| `INTEGER` | The value is a signed integer. |

- The *maximum* length of a string is set by SQLITE\\_MAX\\_LENGTH.
- <img src="x" onerror="window.__xss = 1"> <script>window.__xss = 2</script>

[Read more](javascript:window.__xss=3)
"""


def no_document_elements(page) -> None:
    """No element the document's HTML asked for exists, and none of its scripts ran."""
    # the source dialog's own picture of a PDF page (page_view.js) is the UI's, not the document's
    shown = "#main img, #main script, #source-dialog img:not(#source-page-image), #source-dialog script"
    assert page.locator(shown).count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.evaluate("window.__xss") is None


def test_markdown_in_answers_passages_and_chunks_is_formatting_never_html(browser, tmp_path: Path) -> None:
    notes = tmp_path / "storage.md"
    notes.write_text(HOSTILE)
    with server_process(tmp_path / "data", LLM="none", TAGGER="off") as server:
        uploaded = httpx.post(f"{server.url}/ingest/file", files={"file": (notes.name, notes.read_bytes())}, timeout=60)
        assert uploaded.status_code == 200, uploaded.text
        page = open_page(browser, server)

        ask(page, "Which storage classes does a value stored in the database have?")
        page.wait_for_function("document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'")
        answer = page.locator("#answer-text")
        # Extractive answers quote the document's words without its markup (answers/prose.py), so neither
        # the markup characters nor elements made from them appear, whichever unit (the sentence, the table's
        # rows) the answer model quotes; the source card keeps the formatting.
        text = answer.inner_text()
        assert "NULL" in text and "INTEGER" in text, answer.inner_html()
        assert not any(mark in text for mark in ("**", "`", "\\_")), text
        assert answer.locator("strong, em, code").count() == 0, answer.inner_html()
        card = page.locator("#sources li").first
        assert card.locator(".source-snippet strong").count() >= 1, card.inner_html()
        no_document_elements(page)

        answer.locator("a.citation").first.click()
        passage = page.locator("#source-dialog-text")
        assert passage.locator("table th").all_inner_texts() == ["Class", "Meaning"]
        assert passage.locator("table td strong").inner_text() == "NULL"
        assert "SQLITE_MAX_LENGTH" in passage.inner_text() and "\\_" not in passage.inner_text()
        assert '<img src="x" onerror="window.__xss = 1">' in passage.inner_text(), "the document's HTML as text"
        assert passage.locator(".md-link").inner_text() == "Read more"
        no_document_elements(page)

        page.click("#source-dialog-open")
        page.wait_for_selector("#document-chunks .chunk")
        chunk = page.locator("#document-chunks .chunk-text").first
        assert chunk.locator("li em").inner_text() == "maximum"
        assert "<script>window.__xss = 2</script>" in chunk.inner_text()
        assert page.inner_text("#document-title") == "Storage classes"
        no_document_elements(page)
        assert page.errors == [], page.errors


def test_the_matched_chunk_is_set_apart_and_the_overlap_greyed(browser, tmp_path: Path) -> None:
    paragraphs = [
        f"Paragraph {n} is about the {topic} of the machine, which the handbook describes at length here."
        for n, topic in enumerate(["frame", "engine", "gearbox", "brakes", "steering", "wheels", "lights"] * 2)
    ]
    paragraphs[9] = "The gearbox oil is changed every forty thousand kilometres with the synthetic grade."
    handbook = tmp_path / "handbook.md"
    handbook.write_text("\n\n".join(paragraphs) + "\n")
    settings = {"CHUNK_SIZE": "300", "CHUNK_OVERLAP": "60", "WHOLE_DOCUMENT_CHARS": "0", "TAGGER": "off"}
    with server_process(tmp_path / "data", LLM="none", **settings) as server:
        uploaded = httpx.post(f"{server.url}/ingest/file", files={"file": (handbook.name, handbook.read_bytes())})
        assert uploaded.status_code == 200 and uploaded.json()["chunk_count"] > 4, uploaded.text
        found = httpx.post(f"{server.url}/search", json={"question": "When is the gearbox oil changed?"}).json()
        best = found["results"][0]
        span = best["chunk_span"]
        assert best["window"][0] < best["chunk_index"] and span["start"] > 0, "the chunk is inside a wider passage"
        page = open_page(browser, server)

        ask(page, "When is the gearbox oil changed?")
        page.wait_for_function("document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'")
        page.locator("#sources li a.source-link").first.click()
        matched = page.locator("#source-dialog-text .matched-chunk")
        assert " ".join(matched.inner_text().split()) == " ".join(best["text"][span["start"] : span["end"]].split())
        assert "(marked) with its neighbours" in page.inner_text("#source-dialog-meta")
        assert matched.evaluate(
            "box => { const r = box.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; }"
        )

        page.goto(f"{server.url}/#/documents/{best['document_id']}")
        page.wait_for_selector("#document-chunks .chunk >> nth=1")
        chunks = httpx.get(f"{server.url}/documents/{best['document_id']}/chunks").json()["items"]
        shared = chunks[0]["char_end"] - chunks[1]["char_start"]
        assert shared > 0
        second = page.locator("#document-chunks .chunk").nth(1)
        greyed = "".join(second.locator(".chunk-overlap").all_text_contents())
        assert greyed.split() == chunks[1]["text"][:shared].split() and chunks[0]["text"].endswith(
            chunks[1]["text"][:shared]
        )
        assert f"the first {shared} characters (grey) repeat the end of chunk 0" in second.inner_text()
        assert page.locator("#document-chunks .chunk").nth(0).locator(".chunk-overlap").count() == 0
        assert page.errors == [], page.errors

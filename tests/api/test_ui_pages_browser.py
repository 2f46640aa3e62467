"""A PDF citation shown on its page in the web UI (issue 28 part 2; headless Chromium, see test_ui_browser.py).

Against a real server (extractive answers, LLM=none): ask over the test manual, open a citation, and the
source dialog shows the page beside the passage. The picture the UI received is read back from the
page and its tint checked against the rectangles the API stores for the cited chunk
(`GET /documents/{id}/chunks` ``regions``): the chunk's yellow covers them and nothing else, the
answer's sentences (orange) lie within the passage's chunks. A source on several pages turns through
them; a text document's source keeps the text alone.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import ask, chromium, open_page
from carrag.bench.server import server_process
from tests.api.page_pixels import count_outside, orange, pixels, scale_of, share_inside, tinted
from tests.api.test_ui_browser import MANUAL, SPLIT_SMALL_DOCUMENTS, require_chromium

pytestmark = pytest.mark.browser

# The picture the dialog shows, as base64 PNG (read back from its blob: URL).
SHOWN_PICTURE = """async () => {
    const image = document.querySelector('#source-page-image');
    const bytes = new Uint8Array(await (await fetch(image.src)).arrayBuffer());
    let binary = '';
    for (const byte of bytes) binary += String.fromCharCode(byte);
    return btoa(binary);
}"""


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def rects(chunk: dict, page: int) -> list[tuple[int, int, int, int]]:
    return [(r["x0"], r["y0"], r["x1"], r["y1"]) for r in chunk["regions"] if r["page"] == page]


def shown_page(page) -> tuple[int, object, float]:
    """The page number the dialog shows, its picture's pixels and the picture's pixels per point."""
    image = page.locator("#source-page-image")
    picture = pixels(base64.b64decode(page.evaluate(SHOWN_PICTURE)))
    return int(image.get_attribute("data-page")), picture, scale_of(picture, image.get_attribute("data-page-size"))


def cited_chunk(page) -> int:
    href = page.get_attribute("#source-dialog-open", "href")
    return int(re.search(r"chunk=(\d+)", href).group(1))


def test_a_pdf_citation_shows_its_page_with_the_passage_highlighted(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none", **SPLIT_SMALL_DOCUMENTS) as server:
        uploaded = httpx.post(
            f"{server.url}/ingest/file", files={"file": (MANUAL.name, MANUAL.read_bytes())}, timeout=60
        )
        assert uploaded.status_code == 200, uploaded.text
        document_id = uploaded.json()["document_id"]
        notes = httpx.post(
            f"{server.url}/ingest/file",
            files={"file": ("oil-notes.txt", b"Oil notes: the oil filter of the engine is changed at every service.")},
            timeout=60,
        )
        assert notes.status_code == 200, notes.text
        chunks = httpx.get(f"{server.url}/documents/{document_id}/chunks", timeout=30).json()["items"]
        page = open_page(browser, server)

        ask(page, "Which oil filter fits the engine?")
        page.wait_for_function("document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'")
        page.click("#answer-text a.citation >> nth=0")
        page.wait_for_selector("#source-page:not([hidden]) #source-page-image[src]")
        number, picture, scale = shown_page(page)
        index = cited_chunk(page)
        chunk = chunks[index]
        assert number in chunk["pages"] and rects(chunk, number), chunk["regions"]

        highlight = orange(picture)
        chunk_tint = tinted(picture) & ~highlight
        assert share_inside(tinted(picture), rects(chunk, number), scale) > 0.6, "the chunk's lines are tinted"
        assert count_outside(chunk_tint, rects(chunk, number), scale) == 0, "nothing else is tinted as the chunk"
        assert highlight.any(), "the sentences the answer relies on are marked"
        passage = [c for c in chunks if abs(c["chunk_index"] - index) <= 1]  # NEIGHBOUR_WINDOW 1
        assert count_outside(highlight, [r for c in passage for r in rects(c, number)], scale) == 0

        # beside the passage text, not above or below it
        figure = page.locator("#source-page").bounding_box()
        text = page.locator("#source-dialog-text").bounding_box()
        assert figure["x"] + figure["width"] <= text["x"] + 1 and figure["y"] < text["y"] + text["height"]
        page.keyboard.press("Escape")

        # A source on several pages (chunk 1: pages 1 and 3): the dialog turns through them.
        ask(page, "What is the recommended cold tire pressure?")
        page.wait_for_function("document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'")
        spread = chunks[1]
        assert spread["pages"] == [1, 3]
        page.click(f"#sources a.source-link[href$='{document_id}?chunk=1']")
        page.wait_for_selector("#source-page:not([hidden]) #source-page-image[src]")
        first, _, _ = shown_page(page)
        step = "#source-page-prev" if page.locator("#source-page-next").is_disabled() else "#source-page-next"
        assert page.locator("#source-page-label").inner_text().endswith("of 2)")
        page.click(step)
        page.wait_for_function(f"document.querySelector('#source-page-image').dataset.page !== '{first}'")
        second, picture, scale = shown_page(page)
        assert {first, second} == {1, 3} and cited_chunk(page) == 1
        assert share_inside(tinted(picture), rects(spread, second), scale) > 0.6
        assert count_outside(tinted(picture) & ~orange(picture), rects(spread, second), scale) == 0
        page.keyboard.press("Escape")

        # A text document's source: the passage alone.
        page.click(f"#sources a.source-link[href*='{notes.json()['document_id']}']")
        page.wait_for_selector("#source-dialog[open]")
        page.wait_for_timeout(300)
        assert page.locator("#source-page").is_hidden()
        assert page.errors == [], page.errors

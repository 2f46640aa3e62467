"""The web UI in headless Chromium (Debian's `chromium`, driven by Playwright), against a real server.

1. With API_KEYS set and the extractive answerer (LLM=none, fast and deterministic): enter the key,
   upload files through the UI, follow the jobs to done, browse, inspect and delete documents, ask,
   click a [Source n] citation and see the cited passage with its page, then open it in its document.
2. With the real local LLM: the answer streams in (the text grows over several renders).

Without /usr/bin/chromium the tests skip, unless CARRAG_REQUIRE_BROWSER=1 (CI), which fails them.
`make test` installs chromium first when it can (root + apt-get).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import CHROMIUM, ask, chromium, enter_api_key, open_page, upload_through_ui, wait_for_jobs
from carrag.bench.server import server_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANUAL = FIXTURES / "2019_Ford_F150_Owners_Manual.pdf"
API_KEY = "ui-test-key"
# The 4-page test manual is short enough to be kept whole by default; split it to see chunk pages.
SPLIT_SMALL_DOCUMENTS = {"WHOLE_DOCUMENT_CHARS": "0"}
# Document text the UI must show as text, never run: any of these executing sets window.__xss.
HOSTILE_MARKDOWN = (
    "# Release notes\n\nThe snapshot retention period is thirty days.\n\n"
    '<img src="x" onerror="window.__xss = 1"> <script>window.__xss = 2</script> '
    "[Source 1](javascript:window.__xss=3)\n"
)

pytestmark = pytest.mark.browser


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing (Debian: apt-get install chromium; `make test` does it as root)"
    if os.environ.get("CARRAG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"CARRAG_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def test_ingest_browse_ask_and_open_a_citation(browser, tmp_path: Path) -> None:
    notes = tmp_path / "upload" / "release-notes.md"
    notes.parent.mkdir()
    notes.write_text(HOSTILE_MARKDOWN)
    big = tmp_path / "upload" / "long-report.txt"  # thousands of chunks: embedding takes a while
    big.write_text(
        "\n\n".join(
            f"Section {n}. Measurement {n} of the long report was within tolerance on "
            f"day {n % 365}, said the inspector, and the next check is due."
            for n in range(12_000)
        )
    )
    with server_process(tmp_path / "data", LLM="none", API_KEYS=API_KEY, **SPLIT_SMALL_DOCUMENTS) as server:
        page = open_page(browser, server)
        job_requests: list[str] = []
        page.on("request", lambda request: job_requests.append(request.url) if "/jobs/" in request.url else None)

        # Without the key the API refuses, and the UI says what to do.
        page.click("nav.tabs >> text=Documents")
        page.wait_for_selector("#banner:not([hidden])")
        assert "API key" in page.inner_text("#banner")
        enter_api_key(page, API_KEY)
        assert page.evaluate("localStorage.getItem('carrag.apiKey')") == API_KEY

        # (a) Ingest: two files through the UI, each followed as an async job to done.
        upload_through_ui(page, [MANUAL, notes], tags="manuals, Trucks")
        states = wait_for_jobs(page, 2)
        details = page.locator("#jobs .job .job-detail").all_inner_texts()
        assert states == ["done", "done"], details
        assert all(re.match(r"Ingested: \d+ chunks? · tags: ", text) for text in details), details
        assert any(url.startswith(server.url + "/jobs/") for url in job_requests), "the UI polled GET /jobs/{id}"
        assert page.locator("#jobs .job progress").first.evaluate("bar => bar.value === bar.max")

        # A long job can be cancelled while it embeds; nothing of it is stored.
        upload_through_ui(page, [big], tags="big")
        page.wait_for_selector("#jobs .job[data-state=embedding] .cancel:not([hidden])", timeout=60_000)
        page.click("#jobs .job[data-state=embedding] .cancel")
        page.wait_for_selector("#jobs .job[data-state=cancelled]", timeout=60_000)
        assert "nothing of it was stored" in page.inner_text("#jobs .job[data-state=cancelled] .job-detail")

        # (b) Documents: the list, a tag filter, one document with its chunks and pages, delete.
        page.click("nav.tabs >> text=Documents")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 2")
        page.fill("#doc-tag", "ford")
        page.click("#doc-filter button")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 1")
        assert "tag=ford" in page.url
        page.click("#doc-rows a.doc-name")
        page.wait_for_selector("#document-chunks .chunk")
        assert page.inner_text("#document-title") == "2019 Ford F-150 Owner's Manual"
        pages_shown = page.locator("#document-chunks .chunk-page").all_inner_texts()
        assert pages_shown == ["page 1", "pages 1, 3", "pages 3–4"], "pages of each chunk (page 2 is blank)"
        meta = page.inner_text("#document-meta")
        assert "manuals" in meta and "trucks" in meta and "2019_Ford_F150_Owners_Manual.pdf" in meta

        page.click("nav.tabs >> text=Documents")
        page.fill("#doc-tag", "")
        page.click("#doc-filter button")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 2")
        page.click("a.doc-name >> text=Release notes")  # the title: the first H1 of the .md
        # the manual's chunks are still in the (hidden) list until this document's page replaces them
        page.wait_for_function("document.querySelector('#document-title').textContent === 'Release notes'")
        page.wait_for_selector("#document-chunks .chunk")
        chunk_text = page.inner_text("#document-chunks .chunk-text")
        assert '<img src="x" onerror="window.__xss = 1">' in chunk_text, "document text is shown as text"
        page.click("#document-delete")
        page.click("#confirm-ok")
        page.wait_for_url("**/#/documents")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 1")
        assert "release-notes.md" not in page.inner_text("#doc-rows")
        assert httpx.get(f"{server.url}/documents", headers={"Authorization": f"Bearer {API_KEY}"}).json()["total"] == 1

        # (c) Ask: the answer streams in with [Source n] citations; a citation opens its passage.
        ask(page, "Which oil filter fits the engine?")
        page.wait_for_selector("#answer-text a.citation")
        page.wait_for_function("document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'")
        answer = page.inner_text("#answer-text")
        assert "Motorcraft" in answer and "[Source" not in answer, "citations are rendered as links"
        assert page.locator("#sources li").count() >= 1
        page.click("#answer-text a.citation >> nth=0")
        dialog = page.locator("#source-dialog")
        assert dialog.is_visible()
        assert "2019_Ford_F150_Owners_Manual.pdf" in page.inner_text("#source-dialog-title")
        assert "page 1" in page.inner_text("#source-dialog-meta")
        assert "FL-500S" in page.inner_text("#source-dialog-text")
        page.click("#source-dialog-open")
        page.wait_for_selector("#document-chunks .chunk.highlight")
        highlighted = page.inner_text("#document-chunks .chunk.highlight")
        assert "page 1" in highlighted and "FL-500S" in highlighted

        assert page.evaluate("window.__xss") is None, "no document text ran as script"
        assert page.errors == [], page.errors


def test_answer_streams_from_the_local_llm(browser, tmp_path: Path) -> None:
    # A short prompt and answer keep the real model's part to seconds. One llama.cpp thread: with
    # all cores, its threads spin-wait on each other and a busy machine makes that 10-20x slower.
    # Temperature 0 (greedy): llama.cpp seeds its sampler at random, so at the default 0.1 the answer,
    # and with it how many steps it streams in, changed from run to run.
    with server_process(
        tmp_path / "data",
        LLM="local",
        LLM_TEMPERATURE=0,
        LLM_MAX_TOKENS=32,
        MAX_CONTEXT_CHARS=800,
        LOCAL_LLM_THREADS=1,
        **SPLIT_SMALL_DOCUMENTS,
    ) as server:
        uploaded = httpx.post(
            f"{server.url}/ingest/file",
            files={"file": (MANUAL.name, MANUAL.read_bytes(), "application/pdf")},
            timeout=60,
        )
        assert uploaded.status_code == 200, uploaded.text
        page = open_page(browser, server)
        # Record the answer's length at every change, to see it grow token by token.
        page.evaluate(
            """() => {
                window.answerLengths = [];
                new MutationObserver(() => window.answerLengths.push(
                    (document.querySelector('#answer-text') || {textContent: ''}).textContent.length
                )).observe(document.querySelector('#conversation'), {childList: true, subtree: true, characterData: true});
            }"""
        )
        page.click("nav.tabs >> text=Ask")
        page.click("#ask-form summary")
        page.fill("#ask-top-k", "2")
        page.select_option("#ask-mode", "generate")  # the local LLM's default answer mode is extract
        ask(page, "What is the towing capacity of the F-150?")
        page.wait_for_function(
            "document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'"
            " && document.querySelector('#answer-meta').textContent.includes('s')",
            timeout=90_000,
        )
        lengths = [n for n in page.evaluate("window.answerLengths") if n > 0]
        assert len(set(lengths)) >= 3 and lengths == sorted(lengths), f"the answer grew in steps: {lengths}"
        assert len(page.inner_text("#answer-text").strip()) > 20
        assert "SmolLM2" in page.inner_text("#answer-meta") or "smollm2" in page.inner_text("#answer-meta").lower()
        assert page.locator("#sources li").count() >= 1
        page.click("#sources li a.source-link >> nth=0")
        assert "2019_Ford_F150_Owners_Manual.pdf" in page.inner_text("#source-dialog-title")
        assert "page" in page.inner_text("#source-dialog-meta")
        assert page.errors == [], page.errors

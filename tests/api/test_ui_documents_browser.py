"""The Documents screens in headless Chromium (issue 14, items 4, 7 and 8): find by file name, sort,
download the original, a deleted document's page offers no actions, job rows link only to documents
that still exist, and the footer names the store in use. Skips without /usr/bin/chromium (see
tests/api/test_ui_browser.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import chromium, open_page, upload_through_ui, wait_for_jobs
from carrag.bench.server import server_process
from tests.api.test_ui_browser import require_chromium

pytestmark = pytest.mark.browser

FILES = {
    "Zebra crossings.txt": "Stop at zebra crossings and let pedestrians cross first. " * 4,
    "alpha-manual.md": "# Alpha manual\n\n" + "Check the alpha sensor every month and clean its lens. " * 40,
    "beta notes.txt": "Beta notes: the wiper blades squeak when the washer fluid is empty. " * 4,
}


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def names(page) -> list[str]:
    return page.locator("#doc-rows a.doc-name").all_inner_texts()


def test_find_sort_download_deleted_page_and_job_links(browser, tmp_path: Path) -> None:
    upload_dir = tmp_path / "upload"
    upload_dir.mkdir()
    for name, text in FILES.items():
        (upload_dir / name).write_text(text)
    with server_process(tmp_path / "data", LLM="none", WHOLE_DOCUMENT_CHARS="0", CHUNK_SIZE="300") as server:
        page = open_page(browser, server)
        upload_through_ui(page, [upload_dir / name for name in FILES])
        assert wait_for_jobs(page, 3) == ["done", "done", "done"]
        page.wait_for_function("document.querySelectorAll('#jobs .job-link a').length === 3")
        page.wait_for_function("document.querySelector('#store-in-use').textContent.includes('carrag.db')")
        assert page.inner_text("#store-in-use") == f"Store: sqlite · {tmp_path / 'data' / 'carrag.db'}"

        # Find by file name (case-insensitive substring, then a glob) and sort.
        page.click("nav.tabs >> text=Documents")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 3")
        page.fill("#doc-filename", "NOTES")
        page.click("#doc-filter button")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 1")
        assert names(page) == ["beta notes.txt"] and "filename=NOTES" in page.url
        page.fill("#doc-filename", "*.txt")
        page.select_option("#doc-sort", "filename:asc")  # applies at once
        page.wait_for_url("**sort=filename**")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 2")
        assert names(page) == ["beta notes.txt", "Zebra crossings.txt"]
        page.fill("#doc-filename", "")
        page.select_option("#doc-sort", "chunk_count:desc")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 3")
        assert names(page)[0] == "Alpha manual"  # the most chunks; its title is its first heading
        page.reload()  # the address keeps the sort
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 3")
        assert page.input_value("#doc-sort") == "chunk_count:desc"

        # One document: download its original.
        page.click("a.doc-name >> text=beta notes.txt")
        page.wait_for_selector("#document-chunks .chunk")
        assert page.is_visible("#document-download") and page.is_visible("#document-delete")
        document_url = page.url
        with page.expect_download() as download_info:
            page.click("#document-download")
        download = download_info.value
        assert download.suggested_filename == "beta notes.txt"
        assert Path(download.path()).read_text() == FILES["beta notes.txt"]

        # Deleted elsewhere: its page says so and offers no actions; its job row stops linking to it.
        document_id = document_url.rsplit("/", 1)[-1]
        assert httpx.delete(f"{server.url}/documents/{document_id}").status_code == 200
        page.reload()
        page.wait_for_selector("#document-gone:not([hidden])")
        assert page.inner_text("#document-title") == "Document deleted"
        assert not page.is_visible("#document-delete") and not page.is_visible("#document-download")
        assert page.locator("#document-chunks .chunk").count() == 0

        page.click("nav.tabs >> text=Ingest")
        page.wait_for_function(
            "document.querySelectorAll('#jobs .job-gone').length === 1"
            " && document.querySelectorAll('#jobs .job-link a').length === 2"
        )
        gone_row = page.locator("#jobs .job", has=page.locator(".job-gone"))
        assert "beta notes.txt" in gone_row.inner_text()
        assert page.errors == [], page.errors

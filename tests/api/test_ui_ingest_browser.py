"""The Ingest screen's job list in headless Chromium against a real server: a job the page submits is
shown once, even when the list of recent jobs (GET /jobs, sent when the screen opens) is answered after
the server accepted the upload but before the page has read the upload's answer.

Playwright holds the page's upload and the job list to make that order certain: the upload is made
to the server for the page (which creates the job; a routed request cannot forward the page's file),
the job list is let through (it names the new job), and only then is the page given the 202."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import chromium, open_page, upload_through_ui, wait_for_jobs
from carrag.bench.server import server_process
from tests.api.test_ui_browser import require_chromium

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def wait_until(page, condition, what: str) -> None:
    """Let Playwright dispatch route handlers (they run while it waits) until ``condition()``."""
    for _ in range(1500):
        if condition():
            return
        page.wait_for_timeout(20)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_job_listed_before_its_upload_answered_is_shown_once(browser, tmp_path: Path) -> None:
    notes = tmp_path / "upload" / "retention.md"
    notes.parent.mkdir()
    notes.write_text("# Retention\n\nThe snapshot retention period is thirty days.\n")
    with server_process(tmp_path / "data", LLM="none", TAGGER="off") as server:
        page = open_page(browser, server)
        uploads: list = []  # the page's upload, answered later
        listings: list = []

        page.route("**/ingest/file*", lambda route: uploads.append(route))
        page.route("**/jobs?limit=*", lambda route: listings.append(route))

        upload_through_ui(page, [notes])
        wait_until(page, lambda: uploads and listings, "the upload and the job list to be sent")
        accepted = httpx.post(
            f"{server.url}/ingest/file",
            params={"async": "true"},
            files={"file": (notes.name, notes.read_bytes())},
            data={"collection": "default"},
            timeout=60,
        )
        assert accepted.status_code == 202, accepted.text
        listings[0].continue_()
        page.wait_for_function("document.querySelectorAll('#jobs .job').length === 2")  # uploading + listed
        uploads[0].fulfill(status=202, json=accepted.json())

        assert wait_for_jobs(page, 1) == ["done"], "one row per job"
        assert page.locator("#jobs .job").count() == 1
        assert page.errors == [], page.errors


def test_five_files_are_listed_at_once_uploaded_three_at_a_time_and_the_count_follows(browser, tmp_path: Path) -> None:
    """Five files chosen together are five jobs on the screen at once; three uploads are under way
    together (the rest wait their turn, listed, not hidden); each is followed as soon as the server has
    it; the collection picker's document count follows without a reload; a second ingest of the same
    files says what the server did (unchanged: nothing stored), not just DONE."""
    folder = tmp_path / "upload"
    folder.mkdir()
    files = []
    for number in range(1, 6):
        path = folder / f"note-{number}.md"
        path.write_text(f"# Note {number}\n\nThe inspection interval of machine {number} is {7 * number} days.\n")
        files.append(path)
    with server_process(tmp_path / "data", LLM="none", TAGGER="off") as server:
        page = open_page(browser, server)
        page.wait_for_function("document.querySelector('#collection-picker').textContent === 'default (0)'")
        held: list = []
        holding = True
        page.route("**/ingest/file*", lambda route: held.append(route) if holding else route.continue_())

        upload_through_ui(page, files)
        rows = page.locator("#jobs .job")
        assert rows.count() == 5, "every chosen file is a job at once"
        assert rows.locator(".job-name").all_inner_texts() == [path.name for path in files], "in the order chosen"
        wait_until(page, lambda: len(held) == 3, "three uploads under way together")
        page.wait_for_timeout(300)
        assert len(held) == 3, "no more than three at a time"
        assert page.locator("#jobs .job[data-state=waiting]").count() == 2
        assert "Waiting to upload" in page.locator("#jobs .job[data-state=waiting] .job-detail").first.inner_text()

        holding = False
        for route in held:
            route.continue_()
        assert wait_for_jobs(page, 5) == ["done"] * 5
        assert rows.locator(".badge").all_inner_texts() == ["STORED"] * 5
        page.wait_for_function("document.querySelector('#collection-picker').textContent === 'default (5)'")

        upload_through_ui(page, files[:1])  # the same file again: the server says unchanged
        page.wait_for_function("document.querySelectorAll('#jobs .job[data-state=done]').length === 6")
        again = page.locator("#jobs .job").first
        assert again.locator(".badge").inner_text() == "UNCHANGED" and "Unchanged" in again.inner_text()
        assert page.errors == [], page.errors


def test_a_sync_job_shows_its_counts(browser, tmp_path: Path) -> None:
    folder = tmp_path / "shared" / "handbook"
    folder.mkdir(parents=True)
    for name, text in (("brakes.md", "The brake fluid is replaced every two years."), ("tyres.md", "Tyres: 2.4 bar.")):
        (folder / name).write_text(f"# {name}\n\n{text}\n")
    with server_process(tmp_path / "data", LLM="none", TAGGER="off", SYNC_ROOTS=str(tmp_path / "shared")) as server:
        started = httpx.post(f"{server.url}/sync", json={"path": str(folder)}, timeout=60)
        assert started.status_code == 202, started.text
        page = open_page(browser, server)
        page.click("nav.tabs >> text=Ingest")
        assert wait_for_jobs(page, 1) == ["done"]
        assert "2 added" in page.locator("#jobs .job").inner_text()
        assert page.errors == [], page.errors

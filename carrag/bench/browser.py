"""Drive the web UI in headless Chromium through Playwright (a ``dev`` dependency) for the browser tests
and scripts/screenshots.py. No browser is downloaded: ``CARRAG_CHROMIUM`` (default /usr/bin/chromium).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from carrag.bench.server import ServerProcess

CHROMIUM = Path(os.environ.get("CARRAG_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright's sync API); never downloads a browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser: Any, server: ServerProcess, viewport: dict[str, int] | None = None) -> Any:
    """A fresh page on the UI; page errors (uncaught exceptions) are collected on ``page.errors``."""
    # bypass_csp: Playwright's wait_for_function needs eval, which the UI's CSP forbids. It also makes
    # the browser test's XSS check test the UI's own escaping, without the CSP's help.
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 860}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(server.url + "/")
    return page


def enter_api_key(page: Any, key: str) -> None:
    # Opened by setting `open`, not by clicking the summary: the UI itself opens the box when a request
    # gets 401, and a click landing just after that would toggle it shut again.
    page.locator("#key-box").evaluate("box => { box.open = true; }")
    page.fill("#api-key", key)
    page.click("#key-form button[type=submit]")


def upload_through_ui(page: Any, paths: list[Path], tags: str = "") -> None:
    page.click("nav.tabs >> text=Ingest")
    page.set_input_files("#ingest-files", [str(path) for path in paths])
    if tags:
        page.fill("#ingest-tags", tags)
    page.click("#ingest-submit")


def wait_for_jobs(page: Any, count: int, timeout_ms: int = 90_000) -> list[str]:
    """Wait until ``count`` jobs have finished; their states."""
    page.wait_for_function(
        "n => document.querySelectorAll('#jobs .job:is([data-state=done],[data-state=failed],[data-state=cancelled])')"
        ".length >= n",
        arg=count,
        timeout=timeout_ms,
    )
    return page.eval_on_selector_all("#jobs .job", "jobs => jobs.map(job => job.dataset.state)")


def ask(page: Any, question: str) -> None:
    page.click("nav.tabs >> text=Ask")
    page.fill("#ask-question", question)
    page.click("#ask-submit")

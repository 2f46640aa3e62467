"""The API key box in headless Chromium against a real server with API_KEYS: an answer to a request sent
before the key was saved (401, or the collections of no key) must not undo what the saved key did.

The page's first GET /collections (sent without a key, answered 401) is held back by Playwright until
the key is saved and the request made with it has been answered; then it is let through, as a slow
server would answer it. A user who types the key quickly meets the same order."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import chromium, enter_api_key, open_page
from carrag.bench.server import server_process
from tests.api.test_ui_browser import require_chromium

pytestmark = pytest.mark.browser

API_KEY = "ui-key-test"
PICKER_OPTIONS = "document.querySelectorAll('#collection-picker option').length"


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def settle(page) -> None:
    """Let the page run what is queued behind a response it has just received (two timer turns)."""
    page.evaluate("() => new Promise(done => setTimeout(() => setTimeout(done, 50), 50))")


def test_a_401_answered_after_the_key_was_saved_changes_nothing(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none", API_KEYS=API_KEY) as server:
        admin = httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {API_KEY}"})
        assert admin.post("/collections", json={"name": "team-a"}).status_code == 201
        page = open_page(browser, server)
        held = []

        def hold_keyless(route) -> None:
            if "authorization" in route.request.headers:
                route.continue_()
            else:
                held.append(route)

        page.route("**/collections", hold_keyless)
        page.reload()
        for _ in range(500):  # the route handler runs while Playwright waits
            if held:
                break
            page.wait_for_timeout(20)
        assert held, "the page asked for the collections without a key"
        assert page.evaluate("document.querySelector('#key-box').open") is False, "nothing answered 401 yet"

        enter_api_key(page, API_KEY)
        page.wait_for_function(f"{PICKER_OPTIONS} === 2")  # default and team-a, with the key
        assert held, "the request without the key is still held"
        with page.expect_request_finished(lambda request: request.url.endswith("/collections")):
            held[0].continue_()
        settle(page)

        assert page.evaluate("document.querySelector('#key-box').open") is False, "the stale 401 reopened the box"
        assert page.is_hidden("#banner"), page.inner_text("#banner")
        assert page.evaluate(PICKER_OPTIONS) == 2, "the stale answer replaced the collections the key lists"
        assert page.errors == [], page.errors

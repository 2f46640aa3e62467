"""The collection picker in headless Chromium, against a real server: on every screen, remembered in
localStorage; ingest goes into the picked collection, Documents lists it, Ask searches it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import ask, enter_api_key, open_page, upload_through_ui, wait_for_jobs
from carrag.bench.server import server_process
from tests.api.test_ui_browser import MANUAL, SPLIT_SMALL_DOCUMENTS, browser  # noqa: F401

pytestmark = pytest.mark.browser


def test_the_picked_collection_is_where_the_ui_works(browser, tmp_path: Path) -> None:  # noqa: F811
    notes = tmp_path / "upload" / "retention.md"
    notes.parent.mkdir()
    notes.write_text("# Retention\n\nThe snapshot retention period is thirty days.\n")
    with server_process(tmp_path / "data", LLM="none", **SPLIT_SMALL_DOCUMENTS) as server:
        api = httpx.Client(base_url=server.url, timeout=60)
        assert api.post("/collections", json={"name": "team-a"}).status_code == 201
        page = open_page(browser, server)
        queries: list[dict] = []
        page.on(
            "request",
            lambda request: (
                queries.append(json.loads(request.post_data)) if request.url.endswith("/query/stream") else None
            ),
        )

        # the picker lists the collections; default is picked at first
        page.wait_for_selector("#collection-picker option[value=team-a]", state="attached")
        assert page.input_value("#collection-picker") == "default"
        page.select_option("#collection-picker", "team-a")
        assert page.evaluate("localStorage.getItem('carrag.collection')") == "team-a"

        # Ingest into team-a
        upload_through_ui(page, [notes])
        assert wait_for_jobs(page, 1) == ["done"]
        in_team = api.get("/documents", params={"collection": "team-a"}).json()["items"]
        assert [d["filename"] for d in in_team] == ["retention.md"]
        assert api.get("/documents", params={"collection": "default"}).json()["total"] == 0
        upload_through_ui(page, [MANUAL])  # also into team-a
        assert wait_for_jobs(page, 2) == ["done", "done"]

        # Documents lists the picked collection; switching shows the other one
        page.click("nav.tabs >> text=Documents")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 2")
        page.select_option("#collection-picker", "default")
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 0")
        assert "No documents yet" in page.inner_text("#doc-rows")

        # remembered across a reload, on every screen
        page.select_option("#collection-picker", "team-a")
        page.reload()
        page.wait_for_selector("#collection-picker option[value=team-a]", state="attached")
        assert page.input_value("#collection-picker") == "team-a"
        page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 2")
        page.click("#doc-rows a.doc-name")
        page.wait_for_selector("#document-meta dd")
        assert "team-a" in page.inner_text("#document-meta")

        # Ask searches the picked collection
        ask(page, "How long is the snapshot retention period?")
        page.wait_for_selector("#answer-text a.citation")
        assert queries[-1]["collection"] == "team-a"
        page.click("nav.tabs >> text=Ingest")
        assert page.input_value("#collection-picker") == "team-a", "the picker is on every screen"

        # a remembered collection that was deleted falls back to default
        assert api.delete("/collections/team-a").status_code == 200
        page.reload()
        # the page's static picker says "default" before GET /collections answers: wait for the answer,
        # which forgets the deleted collection (asserting at once raced it)
        page.wait_for_function("localStorage.getItem('carrag.collection') === null")
        page.wait_for_selector("#collection-picker option[value=team-a]", state="detached")
        assert page.input_value("#collection-picker") == "default"
        assert page.errors == []


def test_a_key_scoped_to_one_collection_gets_it_picked(browser, tmp_path: Path) -> None:  # noqa: F811
    """With a key that may not read `default` (API_KEY_SCOPES), the picker offers only the key's
    collections and picks one of them, so the screens do not ask for `default` and get 403."""
    scopes = json.dumps({"team-a-key": {"collections": ["team-a"], "read_only": True}})
    with server_process(
        tmp_path / "data", LLM="none", API_KEYS="admin-key,team-a-key", API_KEY_SCOPES=scopes
    ) as server:
        api = httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": "Bearer admin-key"})
        assert api.post("/collections", json={"name": "team-a"}).status_code == 201
        page = open_page(browser, server)
        enter_api_key(page, "team-a-key")
        page.wait_for_function("document.querySelector('#collection-picker').value === 'team-a'")
        options = page.eval_on_selector_all("#collection-picker option", "nodes => nodes.map(n => n.value)")
        assert options == ["team-a"]
        assert page.evaluate("localStorage.getItem('carrag.collection')") == "team-a"
        page.click("nav.tabs >> text=Documents")
        page.wait_for_selector("#doc-rows")
        body = page.inner_text("body")  # shows the data directory's path, e.g. /tmp/pytest-of-root/pytest-403/...
        assert not re.search(r"(?<![\w/-])403(?![\w/-])", body) and "may not read" not in body
        assert page.errors == []

"""Editing a document's tags, title and metadata in the web UI (headless Chromium against a real
server): the form shows the current values, Save sends PATCH /documents/{id}, the page shows the new
values with the same id, and a bad metadata line is reported without a request."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from carrag.bench.browser import chromium, open_page
from carrag.bench.server import server_process
from tests.api.test_ui_browser import require_chromium

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as instance:
        yield instance


def test_edit_tags_title_and_metadata(browser, tmp_path: Path) -> None:
    with server_process(tmp_path / "data", LLM="none", TAGGER="off") as server:
        uploaded = httpx.post(
            f"{server.url}/ingest/file",
            files={"file": ("brakes.txt", b"Check the brake pad thickness every season. " * 20)},
            data={"tags": "old", "metadata": '{"team": "a"}'},
            timeout=120,
        )
        assert uploaded.status_code == 200, uploaded.text
        document_id = uploaded.json()["document_id"]
        page = open_page(browser, server)
        page.goto(f"{server.url}/#/documents/{document_id}")
        page.wait_for_selector("#document-chunks .chunk")
        assert "metadata: team" in page.inner_text("#document-meta")

        page.click(".edit-box summary")
        assert page.input_value("#edit-tags") == "old"
        assert page.input_value("#edit-metadata") == "team=a"
        page.fill("#edit-metadata", "team=b\nnot a pair")
        page.click("#edit-save")
        page.wait_for_function("document.querySelector('#edit-status').textContent.includes('not key=value')")

        page.fill("#edit-title", "Brake care")
        page.fill("#edit-tags", "Brakes, winter")
        page.fill("#edit-metadata", "team=b\nyear=2024")
        page.click("#edit-save")
        page.wait_for_function("document.querySelector('#document-title').textContent === 'Brake care'")
        meta = page.inner_text("#document-meta")
        assert "brakes" in meta and "winter" in meta and "old" not in meta
        stored = httpx.get(f"{server.url}/documents/{document_id}").json()
        assert (stored["title"], stored["tags"], stored["metadata"]) == (
            "Brake care",
            ["brakes", "winter"],
            {"team": "b", "year": 2024},
        )
        assert stored["system_metadata"]["chunking"], "system metadata kept"
        assert page.errors == [], page.errors

"""The web UI's files are served with their security headers; the UI never builds HTML from strings
and loads nothing from outside the service (the browser behaviour is in test_ui_browser.py)."""

from __future__ import annotations

import re

import httpx

from carrag.api.routes.ui import UI_DIR


async def test_index_and_assets_are_served_with_a_strict_policy(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    for name in re.findall(r'(?:src|href)="/ui/([^"]+)"', page.text):
        asset = await client.get(f"/ui/{name}")
        assert asset.status_code == 200, name
        assert asset.headers["content-security-policy"] == policy
    script = await client.get("/ui/app.js")
    assert "javascript" in script.headers["content-type"]


async def test_ui_needs_no_key_but_its_data_does(tmp_path, embedding_backend) -> None:
    from carrag.api.main import create_app
    from tests.conftest import close_container, make_settings, open_container

    container = await open_container(make_settings(tmp_path, api_keys=["k"]), embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        assert (await client.get("/")).status_code == 200
        assert (await client.get("/ui/api.js")).status_code == 200
        assert (await client.get("/documents")).status_code == 401
    await close_container(container)


async def test_unknown_and_traversing_paths_are_404(client: httpx.AsyncClient) -> None:
    for path in ("/ui/nope.js", "/ui/../main.py", "/ui/%2e%2e/main.py"):
        assert (await client.get(path)).status_code == 404, path


def test_ui_code_never_parses_strings_as_html_nor_loads_remote_code() -> None:
    for path in UI_DIR.iterdir():
        text = path.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in text, f"{path.name} uses {sink}"
        assert not re.search(r'(?:src|href)="(?:https?:)?//', text), f"{path.name} loads something remote"
        assert not re.search(r'from\s+"(?:https?:)?//', text), f"{path.name} imports a remote module"

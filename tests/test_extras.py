"""The optional parts (extras): without one, its feature says which extra to install; the rest works."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from carrag import extras
from carrag.api.main import create_app
from carrag.cli import main as cli
from carrag.extras import MissingExtra
from carrag.services.container import build_llm, build_store
from carrag.services.llms.extractive import ExtractiveLLM
from tests.conftest import close_container, make_settings, open_container


def without(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    monkeypatch.setattr(extras, "installed", lambda extra: extra != missing)


def test_every_extra_is_installed_in_the_development_environment() -> None:
    assert all(extras.installed(extra) for extra in extras.EXTRAS)


def test_elasticsearch_store_without_its_extra_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "elasticsearch")
    with pytest.raises(MissingExtra, match=r"pip install 'carrag\[elasticsearch\]'"):
        build_store(make_settings(tmp_path, store="elasticsearch"))


def test_local_llm_without_llama_cpp_falls_back_to_extractive_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    llm = build_llm(make_settings(tmp_path, llm="local"))
    assert isinstance(llm, ExtractiveLLM)
    assert "carrag[embedded]" in llm.reason


async def test_the_api_serves_without_the_mcp_extra(
    tmp_path: Path, embedding_backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, "mcp")
    container = await open_container(make_settings(tmp_path), embedding_backend)
    try:
        app = create_app(container=container)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client,
        ):
            assert (await client.get("/health")).status_code == 200
            assert (await client.post("/mcp", json={})).status_code == 404
    finally:
        await close_container(container)


@pytest.mark.parametrize(("command", "extra"), [(["mcp"], "mcp"), (["eval", "--dataset", "x"], "eval")])
def test_cli_commands_without_their_extra_exit_with_the_install_command(
    command: list[str], extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    without(monkeypatch, extra)
    monkeypatch.setattr(sys, "argv", ["carrag", *command])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert f"pip install 'carrag[{extra}]'" in str(exited.value.code)

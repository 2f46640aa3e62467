"""Shared fixtures. Heavy, read-only parts (the ONNX embedder, the GGUF model) load once per session;
everything that holds state (stores, containers, apps) is fresh per test, in a temporary directory."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.container import Container, build_container
from carrag.services.embedders.local_onnx import LocalOnnxEmbedder
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"

# DATA_DIR defaults to a per-user directory (settings.default_data_dir: $XDG_DATA_HOME/carrag). No test
# may write there: every Settings built without an explicit data_dir, in this process or in the
# subprocesses tests start (which inherit the environment), lands in this throw-away directory instead.
ISOLATED_DATA_HOME = Path(tempfile.mkdtemp(prefix="carrag-test-data-home-"))
os.environ["XDG_DATA_HOME"] = str(ISOLATED_DATA_HOME)
os.environ.pop("DATA_DIR", None)
atexit.register(shutil.rmtree, ISOLATED_DATA_HOME, ignore_errors=True)


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Settings isolated from the developer's environment and .env file."""
    values: dict[str, object] = {
        "data_dir": tmp_path,
        "per_host_delay": 0.0,
        "log_json": False,
        "embed_retry_backoff": 0.01,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(autouse=True)
def root_log_level_restored() -> Iterator[None]:
    """CLI commands run in-process quieten the root logger (`carrag eval`, `carrag eval-answers`);
    later tests that check logged warnings (caplog) must not inherit that."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)


@pytest.fixture(scope="session")
def embedding_backend() -> LocalOnnxEmbedder:
    return LocalOnnxEmbedder()


@pytest.fixture(scope="session")
def local_llm():
    from carrag.services.llms.llama_cpp import LlamaCppLLM

    return LlamaCppLLM(context=2048)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


async def open_container(settings: Settings, embedding_backend, **adapters: object) -> Container:
    adapters.setdefault("llm", ExtractiveLLM("tests"))
    return await build_container(settings, embedding_backend=embedding_backend, **adapters)  # type: ignore[arg-type]


async def close_container(container: Container) -> None:
    """Close what the test owns; the session-wide embedder and LLM stay open."""
    if container.reindexer is not None:
        await container.reindexer.aclose()
    await container.jobs.aclose()
    await container.fetcher.aclose()
    if container.model_change is not None:
        await container.model_change.aclose()  # a store's old model, loaded beside (not the session's)
    await container.store.close()


@pytest.fixture
async def container(settings: Settings, embedding_backend: LocalOnnxEmbedder) -> AsyncIterator[Container]:
    container = await open_container(settings, embedding_backend)
    yield container
    await close_container(container)


@pytest.fixture
async def client(container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        yield client


@pytest.fixture
def manual_pdf() -> bytes:
    return (FIXTURES / "2019_Ford_F150_Owners_Manual.pdf").read_bytes()


# --- Elasticsearch (issue 4) ------------------------------------------------------------------------
# One real node per session: $CARRAG_TEST_ES_URL if set, else the harness in tests/es_harness (built
# with Maven on first use). Without Java/Maven the `elasticsearch` tests skip with the reason, unless
# CARRAG_REQUIRE_ES=1 (set by .ci/run), which turns that into a failure.
_es_session: dict[str, object] = {}


@pytest.fixture(scope="session")
def es_url():
    import os

    configured = os.environ.get("CARRAG_TEST_ES_URL")
    if configured:
        _es_session.update(url=configured, source="CARRAG_TEST_ES_URL")
        yield configured
        return
    from tests.es_harness import node as es_node

    try:
        handle = es_node.start()
    except es_node.HarnessError as exc:
        if os.environ.get("CARRAG_REQUIRE_ES") == "1":
            pytest.fail(f"CARRAG_REQUIRE_ES=1 but the Elasticsearch harness could not start: {exc}", pytrace=False)
        pytest.skip(f"Elasticsearch harness unavailable (set CARRAG_TEST_ES_URL or install Java 17 + Maven): {exc}")
    _es_session.update(
        url=handle.url, version=handle.version, startup_seconds=handle.startup_seconds, source="tests/es_harness"
    )
    yield handle.url
    handle.stop()


# Tests refresh often so that writes, which wait for a refresh (refresh=wait_for), return quickly.
ES_TEST_REFRESH_INTERVAL = "100ms"


async def drop_es_index(client, name: str) -> None:
    """Delete the indices behind the alias ``name`` (or the plain index ``name``), if any."""
    from elasticsearch import NotFoundError

    try:
        concrete = list((await client.indices.get_alias(name=name)).keys())
    except NotFoundError:
        concrete = [name]
    # the kept originals' and the job records' indices beside the alias (elasticsearch/originals.py, jobs.py)
    await client.indices.delete(
        index=",".join([*concrete, f"{name}-originals", f"{name}_jobs"]), ignore_unavailable=True
    )


def es_index_name(prefix: str = "carrag_test") -> str:
    """A fresh index name, so tests sharing the session's node never see each other's data."""
    import uuid

    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def pytest_terminal_summary(terminalreporter) -> None:
    if _es_session:
        details = ", ".join(f"{key}={value}" for key, value in _es_session.items())
        terminalreporter.write_line(f"Elasticsearch for this run: {details}")

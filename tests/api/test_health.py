from __future__ import annotations

from importlib.metadata import version

import httpx

import carrag


async def test_health_reports_every_component(client: httpx.AsyncClient) -> None:
    body = (await client.get("/health")).json()
    assert set(body["components"]) == {"store", "embedder", "llm", "reranker"}
    assert body["components"]["store"]["status"] == "ok"
    assert body["components"]["embedder"]["model"] == "all-MiniLM-L6-v2"
    reranker = body["components"]["reranker"]
    assert reranker["status"] == "off" and "not installed" in reranker["detail"], "RERANK_ENABLED=auto, no model"
    assert body["defaults"] == {"answer_mode": "extract", "top_k": 5, "rerank": False}, "what a request gets unasked"
    others = {name: c["status"] for name, c in body["components"].items() if name != "reranker"}
    assert body["status"] == ("ok" if set(others.values()) == {"ok"} else "degraded"), "an off reranker is no fault"


async def test_a_required_reranker_without_its_model_makes_the_service_degraded(tmp_path, embedding_backend) -> None:
    from carrag.api.routes.health import health_report
    from tests.conftest import close_container, make_settings, open_container

    settings = make_settings(tmp_path, rerank_enabled=True)
    container = await open_container(settings, embedding_backend)
    try:
        report = health_report(await container.health(), settings)
        assert report.components["reranker"].status == "unavailable" and report.status == "degraded"
        assert report.defaults is not None and report.defaults.rerank, "RERANK_ENABLED=true: searches try to rerank"
    finally:
        await close_container(container)


async def test_the_version_is_the_installed_packages_everywhere(client: httpx.AsyncClient) -> None:
    installed = version("carrag")
    assert carrag.__version__ == installed
    assert (await client.get("/health")).json()["version"] == installed
    assert (await client.get("/openapi.json")).json()["info"]["version"] == installed


async def test_health_names_the_store_in_use(client: httpx.AsyncClient, container) -> None:
    store = (await client.get("/health")).json()["store"]
    assert store == {"backend": "sqlite", "location": str(container.settings.resolved_sqlite_path.absolute())}


def test_elasticsearch_location_hides_credentials(tmp_path) -> None:
    from tests.conftest import make_settings

    settings = make_settings(
        tmp_path, store="elasticsearch", elasticsearch_url="https://user:secret@es1:9200,http://es2:9200/"
    )
    assert settings.store_location == "https://es1:9200,http://es2:9200/ index carrag_chunks"

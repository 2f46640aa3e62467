"""Two `carrag serve` processes on one Elasticsearch index, as two replicas behind a load balancer
(issue 12: before the versioned protocol, 12 rounds of simultaneous replaces left 8 versions and
54 of 61 searches saw two versions at once). Each round both replicas receive a new version of the
same source at the same moment, and sometimes a delete; searches run against both all along."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest
from elasticsearch import AsyncElasticsearch

from carrag.bench.server import server_process
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name

pytestmark = [pytest.mark.elasticsearch, pytest.mark.slow]

ROUNDS = 8
SOURCE = "runbook.md"


def version_text(name: str) -> str:
    return "\n\n".join(f"Ptarmigan procedure {name} step {i}: " + "check the valve and log it. " * 6 for i in range(8))


async def ingest(client: httpx.AsyncClient, name: str) -> httpx.Response:
    return await client.post(
        "/ingest/file",
        files={"file": (f"{name}.md", version_text(name).encode())},
        data={"source_id": SOURCE, "chunk_size": "200", "chunk_overlap": "0"},
        timeout=120,
    )


async def test_two_replicas_racing_replaces_and_deletes(tmp_path, es_url: str) -> None:
    index = es_index_name("carrag_replicas")
    settings = {
        "STORE": "elasticsearch",
        "ELASTICSEARCH_URL": es_url,
        "ELASTICSEARCH_INDEX": index,
        "ELASTICSEARCH_REFRESH_INTERVAL": ES_TEST_REFRESH_INTERVAL,
        "LLM": "none",
        "TAGGER": "off",
        "RERANK_ENABLED": "false",
    }
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(server_process(tmp_path / "a", **settings))
        second = stack.enter_context(server_process(tmp_path / "b", **settings))
        async with (
            httpx.AsyncClient(base_url=first.url) as a,
            httpx.AsyncClient(base_url=second.url) as b,
        ):
            seen: list[set[str]] = []
            errors: list[int] = []
            stop = asyncio.Event()

            async def search(client: httpx.AsyncClient) -> None:
                while not stop.is_set():
                    response = await client.post(
                        "/search", json={"question": "ptarmigan procedure valve", "top_k": 20, "mode": "bm25"}
                    )
                    if response.status_code != 200:
                        errors.append(response.status_code)
                        continue
                    seen.append({hit["document_id"] for hit in response.json()["results"]})

            searchers = [asyncio.create_task(search(client)) for client in (a, b, a, b)]
            for round_number in range(ROUNDS):
                responses = await asyncio.gather(ingest(a, f"a{round_number}"), ingest(b, f"b{round_number}"))
                assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
                if round_number % 3 == 2:  # a delete racing a re-ingest, through the other replica
                    live = (await a.get("/documents", params={"limit": 10})).json()["items"][0]["document_id"]
                    deleted, replaced = await asyncio.gather(
                        b.delete(f"/documents/{live}"), ingest(a, f"c{round_number}")
                    )
                    assert deleted.status_code in (200, 404) and replaced.status_code == 200
            await asyncio.sleep(0.5)
            stop.set()
            await asyncio.gather(*searchers)

            assert not errors, f"searches failed: {errors}"
            assert len(seen) >= ROUNDS
            assert all(len(versions) <= 1 for versions in seen), [v for v in seen if len(v) > 1][:3]
            listing = (await b.get("/documents", params={"limit": 50})).json()
            live = [item for item in listing["items"] if item["source_id"] == SOURCE]
            assert len(live) <= 1, "exactly one version (or none, if a delete came last) survives"

    raw = AsyncElasticsearch(es_url)
    try:
        await raw.indices.refresh(index=index)
        versions = await raw.search(index=index, query={"term": {"doc_kind": "version"}}, size=100)
        assert len(versions["hits"]["hits"]) == len(live), "losing and replaced versions are deleted"
        chunks = await raw.count(index=index, query={"term": {"doc_kind": "chunk"}})
        assert chunks["count"] == (live[0]["chunk_count"] if live else 0)
    finally:
        await drop_es_index(raw, index)
        await raw.close()

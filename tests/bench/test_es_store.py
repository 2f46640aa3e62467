"""`carrag bench --store elasticsearch` on the session's node, tiny: the write ratio comes from
alternating rounds after an uncounted warm-up, the search ratio from alternating requests, and
nothing is left behind."""

from __future__ import annotations

import statistics

import pytest
from elasticsearch import AsyncElasticsearch

from carrag.bench.es_store import EsBenchConfig, run_es_bench
from tests.conftest import es_index_name, make_settings

pytestmark = pytest.mark.elasticsearch


async def test_the_bench_alternates_raw_and_store_and_cleans_up(tmp_path, es_url: str) -> None:
    index = es_index_name("carrag_bench")
    settings = make_settings(tmp_path, elasticsearch_url=es_url, elasticsearch_index=index)
    config = EsBenchConfig(documents=12, writers=(2, 0), documents_per_writer_cap=3, queries=4, write_rounds=2)
    lines: list[str] = []
    result = await run_es_bench(settings, config, lines.append)

    assert any("warming the node up" in line for line in lines)
    assert [line for line in lines if line.startswith("round ")] == [
        "round 1: raw async_bulk, then the store with 12 writers, 48 chunks …",
        "round 2: raw async_bulk, then the store with 12 writers, 48 chunks …",
    ]
    assert len(result.write_rounds) == 2
    for round_ in result.write_rounds:
        assert round_["raw"] > 0 and round_["store"] > 0
        assert round_["ratio"] == pytest.approx(round_["store"] / round_["raw"], rel=0.01)
    assert result.write_ratio == pytest.approx(statistics.median(r["ratio"] for r in result.write_rounds))
    assert result.raw_bulk_chunks_per_s == statistics.median(r["raw"] for r in result.write_rounds)
    assert set(result.store_chunks_per_s) == {2, 12}
    assert result.search_p50_ms > 0 and result.raw_hybrid_p50_ms > 0
    assert result.search_ratio == pytest.approx(result.search_p50_ms / result.raw_hybrid_p50_ms)
    assert any("alternating rounds" in line for line in result.lines())

    client = AsyncElasticsearch(es_url)
    try:
        left = await client.indices.get(index=f"{index}_bench_*", allow_no_indices=True, expand_wildcards="all")
        assert dict(left) == {}, "the bench deletes every index it made"
    finally:
        await client.close()


async def test_raw_bulk_writes_the_chunks_the_store_writes_and_raw_search_fetches_them_plain(
    tmp_path, es_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like for like: the raw bulk writes each chunk with its stored neighbours, as the store does; the
    raw hybrid request fetches the chunks without them (what a plain hybrid request returns)."""
    from carrag.bench import es_store
    from carrag.services.stores.elasticsearch import ElasticsearchStore

    settings = make_settings(tmp_path, elasticsearch_url=es_url, elasticsearch_index=es_index_name("carrag_bench"))
    documents = es_store.synthetic_documents(EsBenchConfig(documents=2, chunks_per_document=3, dimension=4))
    written: list[dict] = []
    bulk = es_store.helpers.async_bulk

    async def recording_bulk(client, actions, **kwargs):  # type: ignore[no-untyped-def]
        written.extend(actions)
        return await bulk(client, actions, **kwargs)

    monkeypatch.setattr(es_store.helpers, "async_bulk", recording_bulk)
    client = AsyncElasticsearch(es_url)
    probe = ElasticsearchStore.from_settings(settings)
    try:
        await es_store.raw_bulk(client, f"{settings.elasticsearch_index}_raw", probe, documents, 4)
    finally:
        await probe.close()
    assert [[n["chunk_index"] for n in a["_source"]["neighbours"]["chunks"]] for a in written[:3]] == [[1], [0, 2], [1]]

    searched: list[dict] = []

    class Client:
        async def search(self, **kwargs):  # type: ignore[no-untyped-def]
            searched.append(kwargs)
            return {"hits": {"hits": []}}

    await es_store.raw_hybrid_search(Client(), "alias", settings, "engine oil", documents[0].vectors[0], 5)  # type: ignore[arg-type]
    assert len(searched) == 2 and all(set(s["source_excludes"]) == {"embedding", "neighbours"} for s in searched)
    await client.close()

"""Carrag's store on a real 3-node cluster (issue 12, item 5): an index of 3 shards with 1 replica;
one data node SIGKILLed in the middle of concurrent ingest and search."""

from __future__ import annotations

import asyncio
import random
import time
import urllib.request

import pytest

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from tests.conftest import drop_es_index, es_index_name
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

pytestmark = [pytest.mark.elasticsearch, pytest.mark.slow]

CHUNKS = 5


def cluster_health(url: str, wait_for: str) -> dict:
    import json

    with urllib.request.urlopen(f"{url}/_cluster/health?wait_for_status={wait_for}&timeout=90s", timeout=100) as r:
        return json.loads(r.read())


async def test_a_killed_data_node_loses_nothing_acknowledged_and_shows_nothing_partial(es_cluster) -> None:
    store = ElasticsearchStore(
        ",".join(es_cluster.urls),
        index=es_index_name("carrag_cluster"),
        shards=3,
        replicas=1,
        timeout=20,
        refresh_interval="200ms",
    )
    await store.open()
    settings = await store.client.indices.get_settings(index=store.index)
    index_settings = next(iter(settings.values()))["settings"]["index"]
    assert (index_settings["number_of_shards"], index_settings["number_of_replicas"]) == ("3", "1")
    await asyncio.to_thread(cluster_health, es_cluster.url, "green")

    acknowledged: list[str] = []
    failed_writes: list[str] = []
    answered, unavailable = 0, 0
    partial: list[tuple[str, list]] = []
    stop = asyncio.Event()

    async def writer(number: int) -> None:
        n = 0
        while not stop.is_set():
            name = f"w{number}-{n}"
            n += 1
            texts = [f"lagopus {name} part {i}" for i in range(CHUNKS)]
            try:
                await store.write_document(
                    record(name, f"{name}.txt", chunks=CHUNKS), chunks_of(*texts), unit_vectors(CHUNKS, n), IDENTITY
                )
                acknowledged.append(name)
            except DependencyUnavailable:
                failed_writes.append(name)
                await asyncio.sleep(0.2)

    async def searcher(seed: int) -> None:
        """Looks up a document acknowledged before the search began: it must be there, whole."""
        nonlocal answered, unavailable
        rng = random.Random(seed)
        while not stop.is_set():
            if not acknowledged:
                await asyncio.sleep(0.05)
                continue
            name = rng.choice(acknowledged)
            try:
                hits = await store.lexical_search("lagopus part", 50, SearchFilters(source=f"{name}.txt"))
            except DependencyUnavailable:
                unavailable += 1
                await asyncio.sleep(0.2)
                continue
            answered += 1
            if sorted(h.chunk.chunk_index for h in hits) != list(range(CHUNKS)):
                partial.append((name, [h.chunk.key for h in hits]))

    tasks = [asyncio.create_task(writer(n)) for n in range(3)] + [asyncio.create_task(searcher(n)) for n in range(2)]
    await asyncio.sleep(4)
    killed_at = time.monotonic()
    es_cluster.kill(1)
    await asyncio.sleep(8)
    stop.set()
    await asyncio.gather(*tasks)
    print(
        f"acknowledged {len(acknowledged)}, failed {len(failed_writes)}, searches answered {answered}, "
        f"503 {unavailable}, {time.monotonic() - killed_at:.1f}s after the kill"
    )
    assert acknowledged and answered
    assert not partial, partial[:2]

    await asyncio.to_thread(es_cluster.restart, 1)
    await asyncio.to_thread(cluster_health, es_cluster.url, "green")
    for name in acknowledged:
        document = await store.find_by_source(f"{name}.txt")
        assert document is not None and document.document_id == name, f"acknowledged {name} was lost"
        assert len(await store.get_chunks(name)) == CHUNKS
    for name in failed_writes:  # a failed write is either wholly there (acknowledged late) or wholly absent
        listed = await store.get_chunks(name)
        assert len(listed) in (0, CHUNKS)
    await store.sweep(older_than=0)  # rollbacks that could not run while the node was down
    assert await store.check_integrity() == []
    await drop_es_index(store.client, store.index)
    await store.close()

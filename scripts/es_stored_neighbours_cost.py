"""What the stored neighbours (`mapping.py` ``neighbours``) cost a search leg: the same BM25 and kNN
requests with and without the field in ``_source`` (docs/benchmarks.md, "Neighbours stored in the chunks").

Usage: STORE=elasticsearch ELASTICSEARCH_URL=http://127.0.0.1:<port> \\
       python scripts/es_stored_neighbours_cost.py [QUESTIONS]

One index of the bench's 400 synthetic documents (`carrag/bench/es_store.py`) written by the store (so
every chunk stores its neighbours); then, question by question, each leg's request (the store's own
bodies, ``top_k × RETRIEVAL_K_MULTIPLIER`` hits) is sent with ``source_excludes`` of a search leg
(``SEARCH_SOURCE_EXCLUDES``: the neighbours fetched) and of a plain chunk read (``CHUNK_SOURCE_EXCLUDES``),
alternating which goes first. Prints the p50 of the client's time and of Elasticsearch's ``took`` for
each, and the response sizes. Then the bench's raw ``async_bulk`` of the same chunks into a fresh index
with the store's mapping, with and without the neighbours in each chunk, alternating, ``BULK_ROUNDS``
times each: chunks/s (median) and the index's store size.
"""

import asyncio
import json
import os
import statistics
import sys
import time
from typing import Any

from elasticsearch import helpers

from carrag.bench.es_store import (
    bench_questions,
    fill_search_index,
)
from carrag.services.ids import chunk_id
from carrag.services.models import SearchFilters
from carrag.services.settings import get_settings
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    SEARCH_SOURCE_EXCLUDES,
    chunk_source,
    embedding_property,
    index_mappings,
    neighbours_of,
)
from carrag.services.stores.elasticsearch.queries import knn_request, lexical_request

QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
BULK_ROUNDS = 6
VARIANTS = {"with neighbours": SEARCH_SOURCE_EXCLUDES, "without": CHUNK_SOURCE_EXCLUDES}


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


async def main() -> None:
    filled = await fill_search_index(get_settings(), "neighbours")
    container, settings, alias, config = filled.container, filled.settings, filled.alias, filled.config
    store: Any = container.store
    client = store.client
    try:
        documents = filled.documents
        await client.indices.refresh(index=alias)
        depth = config.top_k * settings.retrieval_k_multiplier
        questions = bench_questions(QUESTIONS)
        vectors = [await container.embedder.embed_query(question) for question in questions]
        wall: dict[tuple[str, str], list[float]] = {}
        took: dict[tuple[str, str], list[float]] = {}
        size: dict[tuple[str, str], list[float]] = {}
        load = os.getloadavg()[0]
        for warm in (True, False):
            for number, (question, vector) in enumerate(zip(questions, vectors, strict=True)):
                requests = {
                    "BM25": lexical_request(question, depth, SearchFilters()),
                    "kNN": knn_request(vector, depth, settings.elasticsearch_num_candidates, SearchFilters()),
                }
                order = list(VARIANTS) if number % 2 == 0 else list(reversed(VARIANTS))
                for leg, body in requests.items():
                    for variant in order:
                        started = time.perf_counter()
                        response = await client.search(index=alias, **body, source_excludes=VARIANTS[variant])
                        elapsed = (time.perf_counter() - started) * 1000
                        if warm:
                            continue
                        wall.setdefault((leg, variant), []).append(elapsed)
                        took.setdefault((leg, variant), []).append(float(response["took"]))
                        size.setdefault((leg, variant), []).append(len(json.dumps(response.body)))
        print(f"load {load:.2f} → {os.getloadavg()[0]:.2f}, {QUESTIONS} questions, {depth} hits per request")
        for key in wall:
            leg, variant = key
            print(
                f"{leg:<4} {variant:<16} client p50 {p50(wall[key])} ms, took p50 {p50(took[key])} ms, "
                f"response {p50(size[key]) / 1024:.1f} KiB"
            )
        await bulk_cost(client, alias, store, documents, config.dimension)
    finally:
        await filled.close()


async def bulk_cost(client: Any, alias: str, store: Any, documents: list[Any], dimension: int) -> None:
    mappings = index_mappings()
    mappings["properties"] = {**mappings["properties"], "embedding": embedding_property(dimension)}
    rates: dict[bool, list[float]] = {True: [], False: []}
    sizes: dict[bool, int] = {}
    for number in range(BULK_ROUNDS):
        for stored in (True, False) if number % 2 == 0 else (False, True):
            index = f"{alias}_bulk_{number}_{int(stored)}"
            await client.indices.create(index=index, settings=store.layout.settings(), mappings=mappings)
            actions = [
                {
                    "_index": index,
                    "_id": chunk_id(document.record.document_id, chunk.chunk_index),
                    "_source": chunk_source(
                        document.record, chunk, vector, neighbours_of(document.chunks, chunk) if stored else None
                    ),
                }
                for document in documents
                for chunk, vector in zip(document.chunks, document.vectors, strict=True)
            ]
            started = time.perf_counter()
            await helpers.async_bulk(client.options(request_timeout=120), actions, chunk_size=500)
            rates[stored].append(len(actions) / (time.perf_counter() - started))
            await client.indices.refresh(index=index)
            await client.indices.forcemerge(index=index, max_num_segments=1)
            stats = await client.indices.stats(index=index, metric="store")
            sizes[stored] = stats["indices"][index]["primaries"]["store"]["size_in_bytes"]
            await client.indices.delete(index=index)
    for stored in (True, False):
        rounds = ", ".join(f"{rate:,.0f}" for rate in rates[stored])
        print(
            f"raw async_bulk {'with neighbours' if stored else 'without':<16} chunks/s {rounds}; median "
            f"{statistics.median(rates[stored]):,.0f}; index after force merge {sizes[stored] / 2**20:.1f} MiB"
        )


asyncio.run(main())

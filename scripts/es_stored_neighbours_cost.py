"""What the stored neighbours (`mapping.py` ``neighbours``) cost a search leg: the same BM25 and kNN
requests with and without the field in ``_source`` (docs/benchmarks.md, "Neighbours stored in the chunks").

Usage: STORE=elasticsearch ELASTICSEARCH_URL=http://127.0.0.1:<port> \\
       python scripts/es_stored_neighbours_cost.py [QUESTIONS]

One index of the bench's 400 synthetic documents (`carrag/bench/es_store.py`) written by the store (so
every chunk stores its neighbours); then, question by question, each leg's request (the store's own
bodies, ``top_k × RETRIEVAL_K_MULTIPLIER`` hits) is sent with ``source_excludes`` of a search leg
(``SEARCH_SOURCE_EXCLUDES``: the neighbours fetched) and of a plain chunk read (``CHUNK_SOURCE_EXCLUDES``),
alternating which goes first. Prints the p50 of the client's time and of Elasticsearch's ``took`` for
each, and the response sizes.
"""

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

from carrag.bench.es_store import (
    EsBenchConfig,
    bench_questions,
    drop,
    search_settings,
    store_writes,
    synthetic_documents,
)
from carrag.services.models import SearchFilters
from carrag.services.settings import get_settings
from carrag.services.stores.elasticsearch.mapping import CHUNK_SOURCE_EXCLUDES, SEARCH_SOURCE_EXCLUDES
from carrag.services.stores.elasticsearch.queries import knn_request, lexical_request

QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
VARIANTS = {"with neighbours": SEARCH_SOURCE_EXCLUDES, "without": CHUNK_SOURCE_EXCLUDES}


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


async def main() -> None:
    from carrag.services.container import build_container

    settings = get_settings()
    alias = f"{settings.elasticsearch_index}_neighbours_{uuid.uuid4().hex[:6]}"
    settings = search_settings(settings, alias)
    container = await build_container(settings)
    store: Any = container.store
    client = store.client
    try:
        identity = await container.embedder.embedding_identity()
        config = EsBenchConfig(documents=400, dimension=identity.dimension)
        await store_writes(store, synthetic_documents(config), config.documents, identity)
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
    finally:
        await drop(client, alias)
        await container.store.close()


asyncio.run(main())

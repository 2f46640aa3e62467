"""`POST /search` on Elasticsearch, old read path against new, beside a raw hybrid request (docs/benchmarks.md).

Usage: STORE=elasticsearch ELASTICSEARCH_URL=http://127.0.0.1:<port> python scripts/es_search_paths.py [QUESTIONS]

One process, one index (the bench's 400 synthetic documents, `carrag/bench/es_store.py`), one app.
For each question, in an order that rotates from question to question so load that drifts during
the run (a shared machine) falls on every path alike:

- ``raw``: the query embedded, then the BM25 and kNN requests sent at once, RRF in Python;
- ``old``: `/search` as before issue 12's read-path work: the model check (a mapping read) before
  the legs, expansion by `get_windows` after them (emulated here: the check awaited before the legs,
  the store's neighbour windows switched off);
- ``new``: `/search` as it is: the model check beside the legs, neighbours read in the legs' live
  checks.

Prints the p50 of each and the ratios. A first pass over the questions (not timed) lets this
process see every source once (the live filter's first sight, `live_filter.py`).
"""

import asyncio
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np

from carrag.bench.es_store import VOCABULARY, EsBenchConfig, drop, store_writes, synthetic_documents
from carrag.services.models import SearchFilters
from carrag.services.retrieval import search as search_module
from carrag.services.retrieval.fusion import reciprocal_rank_fusion
from carrag.services.settings import get_settings
from carrag.services.stores.elasticsearch.mapping import CHUNK_SOURCE_EXCLUDES
from carrag.services.stores.elasticsearch.queries import knn_request, lexical_request
from carrag.services.stores.elasticsearch.windows import PrefetchedWindows

QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 150
PATH = {"now": "new"}
SearchService = search_module.SearchService
current_retrieve = SearchService._retrieve
current_check = SearchService.check_embedding_identity


async def retrieve(self: Any, *args: Any) -> Any:
    if PATH["now"] == "old":
        await current_check(self)  # before the legs, as the old code did
    return await current_retrieve(self, *args)


async def check(self: Any) -> None:
    if PATH["now"] != "old":  # the old path made its check above
        await current_check(self)


SearchService._retrieve = retrieve  # type: ignore[method-assign]
SearchService.check_embedding_identity = check  # type: ignore[method-assign]


async def main() -> None:
    from carrag.api.main import create_app
    from carrag.services.container import build_container

    settings = get_settings()
    alias = f"{settings.elasticsearch_index}_paths_{uuid.uuid4().hex[:6]}"
    settings = settings.model_copy(
        update={
            "store": "elasticsearch",
            "elasticsearch_index": alias,
            "tagger": "off",
            "llm": "none",
            "rerank_enabled": False,
            "embed_cache_size": 0,
        }
    )
    container = await build_container(settings)
    store: Any = container.store
    client = store.client
    windows = store._windows
    try:
        identity = await container.embedder.embedding_identity()
        config = EsBenchConfig(documents=400, dimension=identity.dimension)
        await store_writes(store, synthetic_documents(config), config.documents, identity)
        rng = np.random.default_rng(11)
        questions = [" ".join(rng.choice(VOCABULARY, size=4)) for _ in range(QUESTIONS)]
        depth = 5 * settings.retrieval_k_multiplier

        async def raw(question: str) -> None:
            vector = await container.embedder.embed_query(question)
            lexical = lexical_request(question, depth, SearchFilters())
            knn = knn_request(vector, depth, settings.elasticsearch_num_candidates, SearchFilters())
            bm25, semantic = await asyncio.gather(
                client.search(index=alias, **lexical, source_excludes=CHUNK_SOURCE_EXCLUDES),  # type: ignore[arg-type]
                client.search(index=alias, **knn, source_excludes=CHUNK_SOURCE_EXCLUDES),
            )
            legs = {name: [hit["_id"] for hit in r["hits"]["hits"]] for name, r in (("bm25", bm25), ("knn", semantic))}
            reciprocal_rank_fusion(legs, k=settings.rrf_k)

        transport = httpx.ASGITransport(app=create_app(container=container))
        async with httpx.AsyncClient(transport=transport, base_url="http://paths") as http:

            async def search(question: str, path: str) -> None:
                PATH["now"] = path
                store._windows = windows if path == "new" else PrefetchedWindows(0)
                response = await http.post("/search", json={"question": question, "top_k": 5, "rerank": False})
                response.raise_for_status()

            for question in questions:
                await search(question, "new")
            timings: dict[str, list[float]] = {"raw": [], "old": [], "new": []}
            order = list(timings)
            started = datetime.now(UTC).isoformat(timespec="seconds")
            for number, question in enumerate(questions):
                for path in order[number % 3 :] + order[: number % 3]:
                    begin = time.perf_counter()
                    await (raw(question) if path == "raw" else search(question, path))
                    timings[path].append((time.perf_counter() - begin) * 1000)
        p50 = {path: statistics.median(values) for path, values in timings.items()}
        print(f"{started}, {QUESTIONS} questions: " + "; ".join(f"{k} p50 {v:.1f} ms" for k, v in p50.items()))
        print(
            f"old/raw {p50['old'] / p50['raw']:.2f}, new/raw {p50['new'] / p50['raw']:.2f}, "
            f"new/old {p50['new'] / p50['old']:.2f}"
        )
    finally:
        await drop(client, alias)
        await container.store.close()


asyncio.run(main())

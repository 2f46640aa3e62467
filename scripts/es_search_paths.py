"""`POST /search` on Elasticsearch, the model check read per search against the one kept in memory,
beside a raw hybrid request (docs/benchmarks.md).

Usage: STORE=elasticsearch ELASTICSEARCH_URL=http://127.0.0.1:<port> [ES_PID=<node pid>] \\
       python scripts/es_search_paths.py [QUESTIONS]

One process, one index (the bench's 400 synthetic documents, `carrag/bench/es_store.py`), one app.
For each question, in an order that rotates from question to question so load that drifts during
the run (a shared machine) falls on every path alike:

- ``raw``: the query embedded, then the BM25 and kNN requests sent at once, RRF in Python;
- ``read``: `/search` with the model check read from Elasticsearch each time (a mapping request, as
  before `served_identity.py`): the store's ``query_identity`` replaced by ``embedding_identity``;
- ``kept``: `/search` as it is (the check answered from memory, the kNN leg reporting its hits' model).

Prints the p50 of each, the ratios to raw, and the CPU per request of this process and, with
``ES_PID``, of the Elasticsearch node (from /proc): on a shared machine CPU varies less than latency.
A first pass over the questions (not timed) lets this process see every source once (the live
filter's first sight, `live_filter.py`).
"""

import asyncio
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from carrag.bench.es_store import (
    bench_questions,
    fill_search_index,
    raw_hybrid_search,
)
from carrag.services.settings import get_settings

QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 150
PATHS = ["raw", "read", "kept"]


def node_cpu_seconds() -> float:
    pid = os.environ.get("ES_PID")
    if not pid:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main() -> None:
    from carrag.api.main import create_app

    filled = await fill_search_index(get_settings(), "paths")
    container, settings, alias = filled.container, filled.settings, filled.alias
    store: Any = container.store
    client = store.client
    try:
        questions = bench_questions(QUESTIONS)
        depth = 5 * settings.retrieval_k_multiplier

        async def raw(question: str) -> None:
            vector = await container.embedder.embed_query(question)
            await raw_hybrid_search(client, alias, settings, question, vector, depth)

        transport = httpx.ASGITransport(app=create_app(container=container))
        async with httpx.AsyncClient(transport=transport, base_url="http://paths") as http:

            async def search(question: str, path: str) -> None:
                if path == "read":
                    store.query_identity = store.embedding_identity
                else:
                    store.__dict__.pop("query_identity", None)
                response = await http.post("/search", json={"question": question, "top_k": 5, "rerank": False})
                response.raise_for_status()

            for question in questions:
                await search(question, "kept")
            timings: dict[str, list[float]] = {path: [] for path in PATHS}
            cpu = {path: [0.0, 0.0] for path in PATHS}
            started = datetime.now(UTC).isoformat(timespec="seconds")
            load = os.getloadavg()[0]
            for number, question in enumerate(questions):
                shift = number % len(PATHS)
                for path in PATHS[shift:] + PATHS[:shift]:
                    begin, own, node = time.perf_counter(), time.process_time(), node_cpu_seconds()
                    await (raw(question) if path == "raw" else search(question, path))
                    timings[path].append((time.perf_counter() - begin) * 1000)
                    cpu[path][0] += time.process_time() - own
                    cpu[path][1] += node_cpu_seconds() - node
        p50 = {path: statistics.median(values) for path, values in timings.items()}
        print(
            f"{started}, load {load:.1f}→{os.getloadavg()[0]:.1f}, {QUESTIONS} questions: "
            + "; ".join(f"{k} p50 {v:.1f} ms" for k, v in p50.items())
        )
        print(f"read/raw {p50['read'] / p50['raw']:.2f}, kept/raw {p50['kept'] / p50['raw']:.2f}")
        print(
            "CPU ms per request (this process + node): "
            + "; ".join(f"{p} {1000 * c[0] / QUESTIONS:.1f} + {1000 * c[1] / QUESTIONS:.1f}" for p, c in cpu.items())
        )
    finally:
        await filled.close()


asyncio.run(main())

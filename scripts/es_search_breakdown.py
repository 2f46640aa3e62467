"""Where `POST /search` on Elasticsearch spends its time beside a raw hybrid request
(docs/benchmarks.md, "The epoch and one check per search").

Usage: STORE=elasticsearch ELASTICSEARCH_URL=http://127.0.0.1:<port> \\
       python scripts/es_search_breakdown.py [QUESTIONS]

One process, one index of the bench's 400 synthetic documents (`carrag/bench/es_store.py`), one app.
A first pass over the questions lets the process meet every source; then, question by question,
`/search` (through the ASGI app, as `carrag bench` calls it) and the raw request alternate: the query
embedded by the same embedder, BM25 and kNN sent at once, RRF in Python. Prints both p50s, the
medians of `/search`'s own `timings_ms`, the raw request's embedding and search times, how many
Elasticsearch requests of each kind were sent with their p50 durations and the multi-gets' sizes,
how many source records the live checks read (0 in a steady index: the epoch confirms the hits), and
the event loop's CPU per request on each side (the main thread's user + system time, which the
embedding's worker thread is not part of).
"""

import asyncio
import collections
import os
import resource
import statistics
import sys
import time
from typing import Any

import httpx

from carrag.bench.es_store import (
    bench_questions,
    fill_search_index,
    raw_hybrid_search,
)
from carrag.services.settings import get_settings

QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 150


def loop_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return (usage.ru_utime + usage.ru_stime) * 1000


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


async def main() -> None:
    from carrag.api.main import create_app

    filled = await fill_search_index(get_settings(), "breakdown")
    container, settings, alias, config = filled.container, filled.settings, filled.alias, filled.config
    store: Any = container.store
    client = store.client
    requests: dict[str, list[float]] = collections.defaultdict(list)
    mget_sizes: list[int] = []
    send = client.perform_request

    async def timed(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        body = kwargs.get("body") or {}
        kind = path.split("?")[0].rsplit("/", 1)[-1] + (" (kNN)" if isinstance(body, dict) and "knn" in body else "")
        if kind == "_mget":
            mget_sizes.append(len(body.get("docs") or body.get("ids") or []))
        started = time.perf_counter()
        try:
            return await send(method, path, *args, **kwargs)
        finally:
            requests[kind].append((time.perf_counter() - started) * 1000)

    client.perform_request = timed
    try:
        questions = bench_questions(QUESTIONS)
        depth = config.top_k * settings.retrieval_k_multiplier
        raw_parts: dict[str, list[float]] = collections.defaultdict(list)

        async def raw(question: str) -> None:
            started = time.perf_counter()
            vector = await container.embedder.embed_query(question)
            embedded = time.perf_counter()
            await raw_hybrid_search(client, alias, settings, question, vector, depth)
            raw_parts["embedding"].append((embedded - started) * 1000)
            raw_parts["searches"].append((time.perf_counter() - embedded) * 1000)

        transport = httpx.ASGITransport(app=create_app(container=container))
        async with httpx.AsyncClient(transport=transport, base_url="http://breakdown") as http:

            async def search(question: str) -> dict[str, Any]:
                response = await http.post(
                    "/search", json={"question": question, "top_k": config.top_k, "rerank": False}
                )
                response.raise_for_status()
                return response.json()

            for question in questions:  # first sight of every source, not timed
                await search(question)
            requests.clear()
            mget_sizes.clear()
            records_before = store._live_filter.records_read
            unchecked_before = store._live_filter.unchecked
            ours, theirs, stages = [], [], collections.defaultdict(list)
            load = os.getloadavg()[0]
            cpu: dict[str, float] = collections.defaultdict(float)
            for question in questions:
                started, cpu_started = time.perf_counter(), loop_cpu_ms()
                answer = await search(question)
                ours.append((time.perf_counter() - started) * 1000)
                cpu["search"] += loop_cpu_ms() - cpu_started
                for stage, ms in answer["timings_ms"].items():
                    stages[stage].append(ms)
                started, cpu_started = time.perf_counter(), loop_cpu_ms()
                await raw(question)
                theirs.append((time.perf_counter() - started) * 1000)
                cpu["raw"] += loop_cpu_ms() - cpu_started
        print(f"load {load:.2f} → {os.getloadavg()[0]:.2f}, {QUESTIONS} questions")
        print(f"/search p50 {p50(ours)} ms; raw hybrid p50 {p50(theirs)} ms; ratio {p50(ours) / p50(theirs):.2f}")
        print("/search timings_ms p50: " + ", ".join(f"{k} {p50(v)}" for k, v in stages.items()))
        print("raw request p50: " + ", ".join(f"{k} {p50(v)} ms" for k, v in raw_parts.items()))
        print(
            "Elasticsearch requests (both paths): "
            + "; ".join(f"{kind} ×{len(times)} p50 {p50(times)} ms" for kind, times in requests.items())
            + f"; multi-get size p50 {p50([float(n) for n in mget_sizes])} documents"
        )
        print(
            f"source records read by /search's checks: {store._live_filter.records_read - records_before}; "
            f"legs confirmed by the epoch read beside them (no check): {store._live_filter.unchecked - unchecked_before}"
        )
        print(
            f"event loop CPU per request (mean): /search {cpu['search'] / QUESTIONS:.2f} ms; "
            f"raw {cpu['raw'] / QUESTIONS:.2f} ms"
        )
    finally:
        await filled.close()


asyncio.run(main())

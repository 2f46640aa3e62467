"""When things happen inside one `POST /search` on Elasticsearch (docs/benchmarks.md, "Python CPU on
the /search path").

Usage: STORE=elasticsearch ELASTICSEARCH_URL=http://127.0.0.1:<port> python scripts/search_timeline.py [QUESTIONS]

One process, the bench's 400 synthetic documents in an index of its own, the app driven through
``httpx.ASGITransport`` as `carrag bench` does. After an untimed pass, each question's `/search`
records the first time each mark is reached, relative to the client's call: the app called (``asgi>``),
the search service called and the legs started, ``embed_query`` called and returned, the embedding
thread entering and leaving ``embed_sync`` (``thread>``/``thread<``), each Elasticsearch request sent
and answered (by kind), the service and the app returning. Prints each mark's median, in order.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import os
import statistics
import sys
import time
from typing import Any

import httpx

from carrag.bench.es_store import (
    bench_questions,
    fill_search_index,
)
from carrag.services.settings import get_settings

QUESTIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
marks: dict[str, float] = {}


def mark(name: str) -> None:
    marks.setdefault(name, time.perf_counter())


def traced_async(owner: Any, attribute: str, name: str) -> None:
    call = getattr(owner, attribute)

    @functools.wraps(call)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        mark(name + ">")
        result = await call(*args, **kwargs)
        mark(name + "<")
        return result

    setattr(owner, attribute, traced)


def traced_sync(owner: Any, attribute: str, name: str) -> None:
    call = getattr(owner, attribute)

    @functools.wraps(call)
    def traced(*args: Any, **kwargs: Any) -> Any:
        mark(name + ">")
        result = call(*args, **kwargs)
        mark(name + "<")
        return result

    setattr(owner, attribute, traced)


async def main() -> None:
    from carrag.api.main import create_app
    from carrag.services.embedders.service import EmbeddingService
    from carrag.services.retrieval.search import SearchService

    filled = await fill_search_index(get_settings(), "timeline")
    container, config = filled.container, filled.config
    store: Any = container.store
    client = store.client
    send = client.perform_request

    async def sent(method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        body = kwargs.get("body") or {}
        kind = path.split("?")[0].rsplit("/", 1)[-1] + (" (kNN)" if isinstance(body, dict) and "knn" in body else "")
        mark(kind + ">")
        result = await send(method, path, *args, **kwargs)
        mark(kind + "<")
        return result

    client.perform_request = sent
    try:
        app = create_app(container=container)

        async def traced_app(scope: Any, receive: Any, send: Any) -> None:
            mark("asgi>")
            await app(scope, receive, send)
            mark("asgi<")

        traced_async(SearchService, "search", "service")
        traced_async(SearchService, "_retrieve", "legs")
        traced_async(EmbeddingService, "embed_query", "embed_query")
        if hasattr(container.embedder.backend, "embed_sync"):
            traced_sync(container.embedder.backend, "embed_sync", "thread")
        offsets: dict[str, list[float]] = collections.defaultdict(list)
        transport = httpx.ASGITransport(app=traced_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://timeline") as http:
            body = {"top_k": config.top_k, "rerank": False}
            questions = bench_questions(QUESTIONS)
            for question in questions:  # first sight of every source, not timed
                (await http.post("/search", json={"question": question, **body})).raise_for_status()
            load = os.getloadavg()[0]
            for question in questions:
                marks.clear()
                started = time.perf_counter()
                (await http.post("/search", json={"question": question, **body})).raise_for_status()
                mark("client<")
                for name, at in marks.items():
                    offsets[name].append((at - started) * 1000)
        print(f"load {load:.2f} → {os.getloadavg()[0]:.2f}, {QUESTIONS} questions; median ms after the client's call:")
        for name, values in sorted(offsets.items(), key=lambda item: statistics.median(item[1])):
            print(f"{statistics.median(values):8.2f}  {name}")
    finally:
        await filled.close()


asyncio.run(main())

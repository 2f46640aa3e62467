"""What the HTTP/ASGI/FastAPI layer adds to one ``POST /search`` (docs/benchmarks.md, "What the HTTP
app adds around the search service").

Usage: python scripts/api_overhead.py [-n 2000] [--rounds 3] [--hits 5] [--chars 1000] [--profile]
                                      [--api-key] [--log-level INFO]
       python scripts/api_overhead.py --elasticsearch http://127.0.0.1:<port> [--documents 300] [-n 100]

Both build the app as ``carrag bench --store elasticsearch`` does (``create_app(container=...)``
driven through ``httpx.ASGITransport``, `carrag/bench/es_store.py` ``_bench_search``).

Stub mode (the default): the embedded default around it (SQLite store in a temporary DATA_DIR,
LLM=none, TAGGER=off, a zero-vector embedder), with ``SearchService.search`` replaced by a stub that
answers a canned `SearchOutcome` of ``--hits`` hits of ``--chars`` characters each. So everything
timed is what lies around the search service: httpx's client and transport, the middlewares, routing,
body parsing, dependencies, validation and serialization of the answer. Prints per-request p50/p95
wall milliseconds and CPU milliseconds (``time.process_time``) for
  app   — the whole app around the stub;
  bare  — a minimal ASGI app that answers the same JSON bytes (what httpx.ASGITransport itself costs,
          which no change to Carrag can cut);
and their difference, per round (app and bare alternate) and as the median of the rounds.
``--profile`` first prints cProfile's top functions by own time; ``--api-key`` sets API_KEYS and sends
the key; ``--log-level INFO`` configures logging as the server does, to /dev/null (the access log's cost).

Elasticsearch mode: the real search service on an index of its own (``carrag_overhead_<hex>``, the
bench's synthetic documents, the configured local embedder, no reranking; deleted afterwards). One
untimed pass over ``-n`` questions, then ``--rounds`` timed passes. Prints the p50 of the HTTP wall
time, of the answer's ``timings_ms.total`` and of their difference (the "gap"), and the gap's parts:
the client before the app is called, the app before the search service is called, the service outside
its own ``total`` (collection lookup, admission, stage metrics), the app after the service returns,
and the client after the app returns.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import logging
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from carrag.api.main import create_app
from carrag.services.container import build_container
from carrag.services.models import ComponentHealth, StoredChunk
from carrag.services.retrieval.search import SearchHit, SearchOutcome
from carrag.services.settings import Settings

QUESTION = {"question": "how do insulin receptors signal", "top_k": 5, "rerank": False}
KEY = "bench-key-0123456789abcdef"


class ZeroEmbedder:
    """Never called (the search service is stubbed); the container wants one."""

    provider = "bench"
    model = "zero"

    @property
    def identity(self) -> str:
        return "bench:zero"

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray:
        return np.zeros((len(texts), 8), dtype=np.float32)

    async def health(self) -> ComponentHealth:
        return ComponentHealth("ok")

    async def aclose(self) -> None:
        return None


def canned_outcome(hits: int, chars: int) -> SearchOutcome:
    sentence = "insulin receptor substrate phosphorylation pathway glucose uptake in skeletal muscle cells "
    text = (sentence * (chars // len(sentence) + 1))[:chars]
    found = [
        SearchHit(
            rank=rank,
            chunk=StoredChunk(
                document_id=f"doc{rank:04d}",
                chunk_index=rank * 3,
                text=text,
                char_start=0,
                char_end=len(text),
                filename=f"paper-{rank}.pdf",
                source_id=f"/data/papers/paper-{rank}.pdf",
                tags=["biology", "insulin"],
                pages=[rank, rank + 1],
                section="Results",
                title=f"Paper {rank}",
            ),
            text=text,
            score=0.03 - rank * 0.001,
            rrf_score=0.03 - rank * 0.001,
            bm25_rank=rank,
            knn_rank=rank + 1,
            window=(rank * 3 - 1, rank * 3 + 1),
            merged_chunk_indexes=[rank * 3 - 1, rank * 3, rank * 3 + 1],
        )
        for rank in range(1, hits + 1)
    ]
    timings = {"embed_query": 4.1, "bm25_leg": 6.2, "knn_leg": 7.3, "retrieve": 12.0, "fuse": 0.1, "total": 19.9}
    return SearchOutcome(found, timings, False, "rerank disabled for this request")


async def timed(http: httpx.AsyncClient, n: int, headers: dict[str, str]) -> tuple[list[float], float]:
    for _ in range(200):  # warm-up, not counted
        (await http.post("/search", json=QUESTION, headers=headers)).raise_for_status()
    walls = []
    cpu = time.process_time()
    for _ in range(n):
        started = time.perf_counter()
        response = await http.post("/search", json=QUESTION, headers=headers)
        walls.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    return walls, (time.process_time() - cpu) * 1000 / n


def bare_app(body: bytes) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def summary(name: str, walls: list[float], cpu_ms: float) -> str:
    p95 = sorted(walls)[int(len(walls) * 0.95)]
    return f"{name:<5} p50 {statistics.median(walls):.3f} ms  p95 {p95:.3f} ms  CPU {cpu_ms:.3f} ms/request"


async def stub_mode(args: argparse.Namespace) -> None:
    rounds: list[tuple[tuple[list[float], float], tuple[list[float], float]]] = []
    with tempfile.TemporaryDirectory(prefix="carrag-api-overhead-") as data_dir:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=Path(data_dir),
            store="sqlite",
            llm="none",
            tagger="off",
            api_keys=[KEY] if args.api_key else [],
        )
        if args.log_level:
            from carrag.api.log_config import configure_logging

            configure_logging(args.log_level, settings.log_json)
            logging.getLogger().handlers[0].stream = open("/dev/null", "w")  # type: ignore[attr-defined]  # noqa: SIM115
        container = await build_container(settings, embedding_backend=ZeroEmbedder())  # type: ignore[arg-type]
        outcome = canned_outcome(args.hits, args.chars)

        async def stub(query: Any, **_: Any) -> SearchOutcome:
            return outcome

        container.search.search = stub  # type: ignore[method-assign]
        headers = {"Authorization": f"Bearer {KEY}"} if args.api_key else {}
        try:
            app = create_app(container=container)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as http:
                body = (await http.post("/search", json=QUESTION, headers=headers)).content
                assert len(json.loads(body)["results"]) == args.hits
                if args.profile:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    await timed(http, args.n, headers)
                    profiler.disable()
                    out = io.StringIO()
                    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(40)
                    print(out.getvalue())
                transport = httpx.ASGITransport(app=bare_app(body))
                async with httpx.AsyncClient(transport=transport, base_url="http://bench") as bare:
                    for _ in range(args.rounds):  # alternating, so a change of load hits both alike
                        rounds.append((await timed(http, args.n, headers), await timed(bare, args.n, headers)))
        finally:
            await container.aclose()
    print(
        f"{args.rounds} rounds of {args.n} requests, {args.hits} hits of {args.chars} chars, response {len(body)} bytes"
    )
    for number, ((walls, cpu_ms), (bare_walls, bare_cpu)) in enumerate(rounds, start=1):
        print(f"round {number}: {summary('app', walls, cpu_ms)}")
        print(f"         {summary('bare', bare_walls, bare_cpu)}")
    app_p50 = statistics.median(statistics.median(r[0][0]) for r in rounds)
    bare_p50 = statistics.median(statistics.median(r[1][0]) for r in rounds)
    app_cpu = statistics.median(r[0][1] for r in rounds)
    bare_cpu = statistics.median(r[1][1] for r in rounds)
    print(
        f"median of rounds: app p50 {app_p50:.3f} ms, CPU {app_cpu:.3f} ms/request; "
        f"bare p50 {bare_p50:.3f} ms, CPU {bare_cpu:.3f} ms/request; "
        f"app - bare: p50 {app_p50 - bare_p50:.3f} ms, CPU {app_cpu - bare_cpu:.3f} ms/request"
    )


async def elasticsearch_mode(args: argparse.Namespace) -> None:
    from elasticsearch import AsyncElasticsearch

    from carrag.bench.es_store import VOCABULARY, EsBenchConfig, drop, store_writes, synthetic_documents

    index = f"carrag_overhead_{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="carrag-api-overhead-") as data_dir:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=Path(data_dir),
            store="elasticsearch",
            elasticsearch_url=args.elasticsearch,
            elasticsearch_index=index,
            tagger="off",
            llm="none",
            rerank_enabled=False,
            embed_cache_size=0,
        )
        client = AsyncElasticsearch(args.elasticsearch)
        container = await build_container(settings)
        try:
            identity = await container.embedder.embedding_identity()
            config = EsBenchConfig(documents=args.documents, dimension=identity.dimension)
            await store_writes(container.store, synthetic_documents(config), args.documents, identity)  # type: ignore[arg-type]
            marks: dict[str, float] = {}
            inner = create_app(container=container)

            async def app(scope: Any, receive: Any, send: Any) -> None:
                marks["app_in"] = time.perf_counter()
                await inner(scope, receive, send)
                marks["app_out"] = time.perf_counter()

            search = container.search.search

            async def marked_search(query: Any, **kwargs: Any) -> SearchOutcome:
                marks["service_in"] = time.perf_counter()
                outcome = await search(query, **kwargs)
                marks["service_out"] = time.perf_counter()
                return outcome

            container.search.search = marked_search  # type: ignore[method-assign]
            rng = np.random.default_rng(11)
            questions = [" ".join(rng.choice(VOCABULARY, size=4)) for _ in range(args.n)]
            walls, totals = [], []
            parts: dict[str, list[float]] = {
                "client before app": [],
                "app before service": [],
                "service outside total": [],
                "app after service": [],
                "client after app": [],
            }
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as http:
                for number in range(args.rounds + 1):  # the first pass: every source seen once, not timed
                    for question in questions:
                        started = time.perf_counter()
                        response = await http.post("/search", json={"question": question, "top_k": 5, "rerank": False})
                        ended = time.perf_counter()
                        response.raise_for_status()
                        if number == 0:
                            continue
                        total = response.json()["timings_ms"]["total"]
                        walls.append((ended - started) * 1000)
                        totals.append(total)
                        parts["client before app"].append((marks["app_in"] - started) * 1000)
                        parts["app before service"].append((marks["service_in"] - marks["app_in"]) * 1000)
                        service_ms = (marks["service_out"] - marks["service_in"]) * 1000
                        parts["service outside total"].append(service_ms - total)
                        parts["app after service"].append((marks["app_out"] - marks["service_out"]) * 1000)
                        parts["client after app"].append((ended - marks["app_out"]) * 1000)
        finally:
            await drop(client, index)
            await client.close()
            await container.aclose()
    gaps = [wall - total for wall, total in zip(walls, totals, strict=True)]
    print(f"{args.rounds} passes of {args.n} questions, {args.documents} documents, index {index} (dropped)")
    print(
        f"HTTP p50 {statistics.median(walls):.2f} ms, timings_ms.total p50 {statistics.median(totals):.2f} ms, "
        f"gap p50 {statistics.median(gaps):.2f} ms"
    )
    print("gap parts, p50 ms: " + ", ".join(f"{name} {statistics.median(v):.3f}" for name, v in parts.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, help="requests per round (stub: 2000) or questions (Elasticsearch: 100)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hits", type=int, default=5)
    parser.add_argument("--chars", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--api-key", action="store_true")
    parser.add_argument("--log-level", default="")
    parser.add_argument("--elasticsearch", metavar="URL", help="time the real search service on this node")
    parser.add_argument("--documents", type=int, default=300)
    arguments = parser.parse_args()
    if arguments.elasticsearch:
        arguments.n = arguments.n or 100
        asyncio.run(elasticsearch_mode(arguments))
    else:
        arguments.n = arguments.n or 2000
        asyncio.run(stub_mode(arguments))
    sys.exit(0)

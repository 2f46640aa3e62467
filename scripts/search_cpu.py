"""CPU of the Python around one `/search`, without Elasticsearch or a model (docs/benchmarks.md,
"Python CPU on the /search path").

Usage: python scripts/search_cpu.py [ROUNDS]

1. The search service alone: `SearchService.search` over a stub store (two legs of 15 hits of ~400
   characters, each with its two neighbours, as the bench's synthetic documents give) and a stub
   embedder; microseconds of CPU (``time.process_time``) per search, min and median of the rounds of
   3,000 searches. Everything timed is Carrag's own Python: collection lookup, admission, the legs'
   scheduling, fusion, dedupe, expansion, hit building.
2. The Elasticsearch client's JSON: a kNN request (a 384-d query vector) encoded and a 15-hit search
   response decoded by the client's standard serializer and by the one the store's client uses
   (`connection.py`), microseconds per call.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import timeit
from types import SimpleNamespace
from typing import Any

import numpy as np
from elasticsearch.serializer import JsonSerializer

from carrag.bench.es_store import VOCABULARY
from carrag.services.embedders.service import EmbeddingService
from carrag.services.models import EmbeddingIdentity, ScoredChunk, SearchFilters, StoredChunk
from carrag.services.requests import SearchQuery
from carrag.services.retrieval.search import SearchService
from carrag.services.settings import Settings
from carrag.services.stores.elasticsearch.connection import Connection

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
SEARCHES = 3000
rng = np.random.default_rng(1)
TEXTS = {(d, i): " ".join(rng.choice(VOCABULARY, size=60)) for d in range(100) for i in range(4)}


def chunk(document: int, index: int) -> StoredChunk:
    text = TEXTS[(document, index)]
    return StoredChunk(f"doc-{document:04d}", index, text, 0, len(text), f"b-{document}.txt", f"b-{document}.txt", [])


def leg(seed: int) -> list[ScoredChunk]:
    draw = np.random.default_rng(seed)
    hits = []
    for rank in range(15):
        document, index = int(draw.integers(100)), int(draw.integers(4))
        window = tuple(chunk(document, i) for i in (index - 1, index + 1) if (document, i) in TEXTS)
        hits.append(ScoredChunk(chunk(document, index), 1.0 / (rank + 1), 1, window))
    return hits


LEXICAL, SEMANTIC = leg(3), leg(4)


class StubStore:
    async def lexical_search(self, question: str, depth: int, filters: SearchFilters) -> list[ScoredChunk]:
        return LEXICAL

    async def vector_search(self, vector: np.ndarray, depth: int, filters: SearchFilters) -> list[ScoredChunk]:
        return SEMANTIC

    async def embedding_identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity("stub:model", 384)

    async def count_chunks(self) -> int:
        return 1600

    async def get_windows(self, missing: Any, radius: int) -> list[StoredChunk]:
        return []


class StubBackend:
    provider, model, identity, dimension = "stub", "model", "stub:model", 384

    async def embed(self, texts: Any, kind: str) -> np.ndarray:
        return np.ones((len(texts), 384), dtype=np.float32)

    async def aclose(self) -> None:
        pass


class StubCollections:
    async def resolve(self, names: Any) -> list[SimpleNamespace]:
        return [SimpleNamespace(collection_id="default", name="default")]


async def service_cpu() -> list[float]:
    settings = Settings(_env_file=None, rerank_enabled=False)
    embedder = EmbeddingService(StubBackend(), cache_size=0)  # type: ignore[arg-type]
    search = SearchService(settings, StubStore(), embedder, None, collections=StubCollections())  # type: ignore[arg-type]
    query = SearchQuery("oil filter brake pad", top_k=5, rerank=False)
    for _ in range(300):
        await search.search(query)
    rounds = []
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(SEARCHES):
            await search.search(query)
        rounds.append((time.process_time() - started) / SEARCHES * 1e6)
    return rounds


def per_call_us(call: Any, number: int = 2000) -> float:
    return min(timeit.repeat(call, number=number, repeat=ROUNDS)) / number * 1e6


def serializers() -> None:
    standard = JsonSerializer()
    store = Connection("http://127.0.0.1:9200").client.transport.serializers.get_serializer("application/json")
    vector = np.random.default_rng(2).normal(size=384).astype(np.float32).tolist()
    knn = {"knn": {"field": "embedding", "query_vector": vector, "k": 15, "num_candidates": 100}, "size": 15}
    hits = [{"_id": f"{n:032x}", "_score": 1.0 / (n + 1), "_source": {"text": TEXTS[(n, 0)]}} for n in range(15)]
    response = json.dumps({"took": 2, "hits": {"total": {"value": 15}, "hits": hits}}).encode()
    print(f"JSON serializer of the store's client: {type(store).__name__}")
    for name, serializer in (("standard", standard), ("store's", store)):
        print(
            f"  {name:>8}: kNN request encoded {per_call_us(lambda s=serializer: s.dumps(knn)):.1f} µs, "
            f"{len(response):,}-byte search response decoded {per_call_us(lambda s=serializer: s.loads(response)):.1f} µs"
        )


rounds = asyncio.run(service_cpu())
print(
    f"search service over stub store and embedder: {min(rounds):.1f} µs CPU per search "
    f"(min of {ROUNDS} rounds of {SEARCHES}; median {statistics.median(rounds):.1f})"
)
serializers()

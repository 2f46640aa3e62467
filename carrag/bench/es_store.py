"""`carrag bench --store elasticsearch`: Carrag's Elasticsearch store next to raw Elasticsearch on the
same node, mapping, chunks and vectors. Writes: chunks/s of ``write_document`` from 1, 8, 64 and all
concurrent writers next to ``helpers.async_bulk``, raw and all-writers alternating ``write_rounds`` times
after an uncounted warm-up (the ratio is the median of the rounds'). Search: p50/p95 of ``POST /search``
(hybrid, no reranking, through the ASGI app) next to the raw BM25 and kNN requests fused by RRF in
Python, alternating question by question. Documents are synthetic (fixed vocabulary, random unit
vectors), so the figures measure the store, not a model; indices ``<ELASTICSEARCH_INDEX>_bench_*`` are
deleted afterwards.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np
from elasticsearch import AsyncElasticsearch, NotFoundError, helpers

from carrag.services.ids import chunk_id
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, SearchFilters
from carrag.services.retrieval.fusion import reciprocal_rank_fusion
from carrag.services.settings import Settings
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.connection import client_options
from carrag.services.stores.elasticsearch.mapping import (
    CHUNK_SOURCE_EXCLUDES,
    chunk_source,
    embedding_property,
    index_mappings,
    neighbours_of,
)
from carrag.services.stores.elasticsearch.originals import originals_index_name
from carrag.services.stores.elasticsearch.queries import knn_request, lexical_request

Report = Callable[[str], None]

VOCABULARY = [
    "engine",
    "oil",
    "filter",
    "brake",
    "pad",
    "tyre",
    "pressure",
    "battery",
    "coolant",
    "valve",
    "pump",
    "sensor",
    "gasket",
    "belt",
    "chain",
    "clutch",
    "gear",
    "axle",
    "spark",
    "plug",
    "fuse",
    "relay",
    "wiring",
    "harness",
    "mirror",
    "wiper",
    "blade",
    "lamp",
    "bulb",
    "seat",
    "heater",
    "vent",
    "duct",
    "hinge",
    "latch",
    "lock",
    "door",
    "window",
    "panel",
    "frame",
    "bracket",
    "bolt",
    "washer",
    "spring",
    "damper",
    "shock",
    "strut",
    "bearing",
    "seal",
]


@dataclass(slots=True)
class EsBenchConfig:
    documents: int = 1000
    chunks_per_document: int = 4
    dimension: int = 384
    writers: tuple[int, ...] = (1, 8, 64, 0)  # 0: every document at once (a bulk ingest)
    documents_per_writer_cap: int = 25  # 1 writer waits for a refresh per document: keep that run short
    queries: int = 100
    top_k: int = 5
    write_rounds: int = 3  # raw bulk and the all-writers store run, alternating


@dataclass(slots=True)
class EsBenchReport:
    node: str
    started_at: str
    config: dict[str, Any]
    raw_bulk_chunks_per_s: float = 0.0  # median of the rounds
    store_chunks_per_s: dict[int, float] = field(default_factory=dict)  # all writers: median of the rounds
    write_rounds: list[dict[str, float]] = field(default_factory=list)  # {raw, store, ratio} per round
    search_p50_ms: float = 0.0
    search_cold_p50_ms: float = 0.0
    search_p95_ms: float = 0.0
    raw_hybrid_p50_ms: float = 0.0
    raw_hybrid_p95_ms: float = 0.0

    @property
    def write_ratio(self) -> float:
        """Store (all writers) over raw bulk: the median of the alternating rounds' ratios."""
        if self.write_rounds:
            return statistics.median(round_["ratio"] for round_ in self.write_rounds)
        best = self.store_chunks_per_s[max(self.store_chunks_per_s)] if self.store_chunks_per_s else 0.0
        return best / self.raw_bulk_chunks_per_s if self.raw_bulk_chunks_per_s else 0.0

    @property
    def search_ratio(self) -> float:
        return self.search_p50_ms / self.raw_hybrid_p50_ms if self.raw_hybrid_p50_ms else 0.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["write_ratio"] = round(self.write_ratio, 3)
        data["search_ratio"] = round(self.search_ratio, 3)
        return data

    def lines(self) -> list[str]:
        out = [f"Elasticsearch {self.node}; raw async_bulk: {self.raw_bulk_chunks_per_s:,.0f} chunks/s"]
        for writers, rate in sorted(self.store_chunks_per_s.items()):
            ratio = rate / self.raw_bulk_chunks_per_s if self.raw_bulk_chunks_per_s else 0.0
            out.append(f"Carrag store, {writers:>4} concurrent writers: {rate:,.0f} chunks/s ({ratio:.2f}× raw bulk)")
        if self.write_rounds:
            rounds = ", ".join(f"{r['store']:,.0f}/{r['raw']:,.0f} = {r['ratio']:.2f}" for r in self.write_rounds)
            out.append(f"store (all writers) / raw bulk, alternating rounds: {rounds}; median {self.write_ratio:.2f}×")
        out.append(
            f"/search p50 {self.search_p50_ms:.1f} ms (p95 {self.search_p95_ms:.1f}); raw hybrid p50 "
            f"{self.raw_hybrid_p50_ms:.1f} ms (p95 {self.raw_hybrid_p95_ms:.1f}); ratio {self.search_ratio:.2f}× "
            f"(first pass, a fresh process: p50 {self.search_cold_p50_ms:.1f} ms)"
        )
        return out


@dataclass(slots=True)
class SyntheticDocument:
    record: DocumentRecord
    chunks: list[Chunk]
    vectors: np.ndarray


def synthetic_documents(config: EsBenchConfig, seed: int = 7) -> list[SyntheticDocument]:
    rng = np.random.default_rng(seed)
    documents = []
    created = datetime.now(UTC).isoformat()
    for number in range(config.documents):
        chunks, offset = [], 0
        for index in range(config.chunks_per_document):
            text = " ".join(rng.choice(VOCABULARY, size=60))
            chunks.append(Chunk(index, text, offset, offset + len(text)))
            offset += len(text) + 1
        vectors = rng.normal(size=(config.chunks_per_document, config.dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        document_id = str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | number))
        record = DocumentRecord(
            document_id=document_id,
            filename=f"bench-{number}.txt",
            source_id=f"bench-{number}.txt",
            source_type="text",
            content_hash=f"bench-{number}",
            chunk_count=len(chunks),
            tags=["bench"],
            metadata={},
            created_at=created,
        )
        documents.append(SyntheticDocument(record, chunks, vectors))
    return documents


async def raw_bulk(
    client: AsyncElasticsearch,
    index: str,
    store: ElasticsearchStore,
    documents: list[SyntheticDocument],
    dimension: int,
) -> float:
    """chunks/s of ``helpers.async_bulk`` into a plain index with the store's settings and mapping."""
    mappings = index_mappings()
    mappings["properties"] = {**mappings["properties"], "embedding": embedding_property(dimension)}
    await client.indices.create(index=index, settings=store.layout.settings, mappings=mappings)
    actions = [
        {
            "_index": index,
            "_id": chunk_id(document.record.document_id, chunk.chunk_index),
            # the chunks the store writes, stored neighbours included
            "_source": chunk_source(document.record, chunk, vector, neighbours_of(document.chunks, chunk)),
        }
        for document in documents
        for chunk, vector in zip(document.chunks, document.vectors, strict=True)
    ]
    started = time.perf_counter()
    await helpers.async_bulk(client.options(request_timeout=120), actions, chunk_size=500)
    elapsed = time.perf_counter() - started
    await client.indices.delete(index=index)
    return len(actions) / elapsed


async def store_writes(
    store: ElasticsearchStore, documents: list[SyntheticDocument], writers: int, identity: EmbeddingIdentity
) -> float:
    """chunks/s of ``write_document`` from ``writers`` concurrent callers."""
    queue = list(reversed(documents))

    async def writer() -> None:
        while queue:
            document = queue.pop()
            await store.write_document(document.record, document.chunks, document.vectors, identity)

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    elapsed = time.perf_counter() - started
    return sum(len(d.chunks) for d in documents) / elapsed


async def drop(client: AsyncElasticsearch, alias: str) -> None:
    """Delete a store's indices: the alias's generations and its kept originals' index."""
    try:
        concrete = list((await client.indices.get_alias(name=alias)).keys())
    except NotFoundError:
        concrete = []
    await client.indices.delete(index=",".join([*concrete, originals_index_name(alias)]), ignore_unavailable=True)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def search_settings(settings: Settings, alias: str) -> Settings:
    """The settings `/search` is measured with: Elasticsearch at ``alias``, no tagging, no LLM, no
    reranking, no embedding cache (every question is embedded, as in the raw request)."""
    return settings.model_copy(
        update={
            "store": "elasticsearch",
            "elasticsearch_index": alias,
            "tagger": "off",
            "llm": "none",
            "rerank_enabled": False,
            "embed_cache_size": 0,
        }
    )


def bench_questions(count: int) -> list[str]:
    """``count`` questions of four vocabulary words (the same ones on every run)."""
    rng = np.random.default_rng(11)
    return [" ".join(rng.choice(VOCABULARY, size=4)) for _ in range(count)]


async def raw_hybrid_search(
    client: AsyncElasticsearch, alias: str, settings: Settings, question: str, vector: np.ndarray, depth: int
) -> list[Any]:
    """The raw hybrid request `/search` is compared with, after the query is embedded: the BM25 and
    kNN searches sent at once (the store's own query bodies), fused by RRF in Python. The hits come
    as a plain chunk read gets them (``CHUNK_SOURCE_EXCLUDES``: without the vector and without the
    stored neighbours, which `/search` fetches for expansion and pays for itself)."""
    lexical = lexical_request(question, depth, SearchFilters())
    knn = knn_request(vector, depth, settings.elasticsearch_num_candidates, SearchFilters())
    bm25, semantic = await asyncio.gather(
        client.search(index=alias, **lexical, source_excludes=CHUNK_SOURCE_EXCLUDES),  # type: ignore[arg-type]
        client.search(index=alias, **knn, source_excludes=CHUNK_SOURCE_EXCLUDES),
    )
    legs = {
        "bm25": [hit["_id"] for hit in bm25["hits"]["hits"]],
        "knn": [hit["_id"] for hit in semantic["hits"]["hits"]],
    }
    return reciprocal_rank_fusion(legs, k=settings.rrf_k)


async def run_es_bench(settings: Settings, config: EsBenchConfig, report: Report) -> EsBenchReport:
    from carrag.api.main import create_app
    from carrag.services.container import build_container

    prefix = f"{settings.elasticsearch_index}_bench_{uuid.uuid4().hex[:8]}"
    client = AsyncElasticsearch(settings.elasticsearch_url, request_timeout=120, **client_options())
    info = await client.info()
    result = EsBenchReport(str(info["version"]["number"]), datetime.now(UTC).isoformat(), asdict(config))
    documents = synthetic_documents(config)
    try:
        container = await build_container(search_settings(settings, f"{prefix}_search"))
        try:
            identity = await container.embedder.embedding_identity()
            if identity.dimension != config.dimension:  # before any write: both sides get the same vectors
                config.dimension = identity.dimension
                documents = synthetic_documents(config)
                result.config = asdict(config)
            await _bench_writes(settings, client, prefix, documents, identity, config, result, report)
            report("filling the search index …")
            await store_writes(container.store, documents, len(documents), identity)  # type: ignore[arg-type]
            await _bench_search(container, client, f"{prefix}_search", config, result, create_app)
        finally:
            await drop(client, f"{prefix}_search")
            await container.store.close()
    finally:
        await client.close()
    return result


async def _bench_writes(
    settings: Settings,
    client: AsyncElasticsearch,
    prefix: str,
    documents: list[SyntheticDocument],
    identity: EmbeddingIdentity,
    config: EsBenchConfig,
    result: EsBenchReport,
    report: Report,
) -> None:
    probe = ElasticsearchStore.from_settings(settings.model_copy(update={"elasticsearch_index": f"{prefix}_raw"}))
    chunks = len(documents) * config.chunks_per_document
    try:
        report(f"warming the node up: raw async_bulk of {chunks} chunks, not counted …")
        await raw_bulk(client, f"{prefix}_warmup", probe, documents, config.dimension)

        async def store_run(name: str, writers: int, batch: list[SyntheticDocument]) -> float:
            store = ElasticsearchStore.from_settings(
                settings.model_copy(update={"elasticsearch_index": f"{prefix}_{name}"})
            )
            await store.open()
            # The raw index is created with the vector field mapped; the store's index gets it on its
            # first write (`IndexLayout.claim_identity`). Both sides start mapped.
            await store.layout.claim_identity(identity)
            try:
                return await store_writes(store, batch, writers, identity)
            finally:
                await drop(client, store.index)
                await store.close()

        for writers in (w for w in config.writers if w):
            count = min(len(documents), writers * config.documents_per_writer_cap)
            report(f"Carrag store, {writers} writers: {count * config.chunks_per_document} chunks …")
            result.store_chunks_per_s[writers] = await store_run(f"w{writers}", writers, documents[:count])
        if 0 not in config.writers:
            result.raw_bulk_chunks_per_s = await raw_bulk(client, f"{prefix}_raw", probe, documents, config.dimension)
            return
        for number in range(max(config.write_rounds, 1)):
            report(
                f"round {number + 1}: raw async_bulk, then the store with {len(documents)} writers, {chunks} chunks …"
            )
            raw = await raw_bulk(client, f"{prefix}_raw{number}", probe, documents, config.dimension)
            ours = await store_run(f"all{number}", len(documents), documents)
            result.write_rounds.append({"raw": raw, "store": ours, "ratio": ours / raw})
        result.raw_bulk_chunks_per_s = statistics.median(r["raw"] for r in result.write_rounds)
        result.store_chunks_per_s[len(documents)] = statistics.median(r["store"] for r in result.write_rounds)
    finally:
        await probe.close()


async def _bench_search(
    container: Any,
    client: AsyncElasticsearch,
    alias: str,
    config: EsBenchConfig,
    result: EsBenchReport,
    create_app: Any,
) -> None:
    settings = container.settings
    depth = config.top_k * settings.retrieval_k_multiplier
    questions = bench_questions(config.queries)
    app = create_app(container=container)

    async def raw_hybrid(question: str) -> list[Any]:
        vector = await container.embedder.embed_query(question)
        return (await raw_hybrid_search(client, alias, settings, question, vector, depth))[: config.top_k]

    async def timed_pass(http: httpx.AsyncClient) -> tuple[list[float], list[float]]:
        ours, raw = [], []
        for question in questions:
            body = {"question": question, "top_k": config.top_k, "rerank": False}
            started = time.perf_counter()
            response = await http.post("/search", json=body)
            ours.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
            started = time.perf_counter()
            await raw_hybrid(question)
            raw.append((time.perf_counter() - started) * 1000)
        return ours, raw

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
        # the first pass warms the process and the node's caches; the second is the figure
        cold, _ = await timed_pass(http)
        ours, raw = await timed_pass(http)
    result.search_cold_p50_ms = round(statistics.median(cold), 2)
    result.search_p50_ms = round(statistics.median(ours), 2)
    result.search_p95_ms = round(_percentile(ours, 0.95), 2)
    result.raw_hybrid_p50_ms = round(statistics.median(raw), 2)
    result.raw_hybrid_p95_ms = round(_percentile(raw, 0.95), 2)

"""Ingest and search timings of the SQLite and Elasticsearch stores on the same data.

    .venv/bin/python scripts/compare_stores.py --es-url URL [--docs 1000] [--queries 200] [--join 1]
        [--corpus corpus.jsonl] [--query-file queries.jsonl]

The data is a BEIR corpus (default: SciFact under /work/shared/data, if present; otherwise the
tests' owner's manual PDF cut into pages). Both stores get the same documents through the real
ingestion pipeline (keyword tagger, default chunking, the local MiniLM embedder), one document at a
time as the API does (``--join N`` ingests N corpus entries as one document, for bigger writes).
--es-url is a running Elasticsearch node (default: ELASTICSEARCH_URL); the tests' harness starts one
without Docker: `.venv/bin/python tests/es_harness/node.py start` prints its url (`... stop` ends it).

Printed per store:
- ingest: the store's own write time (``timings_ms.index``: bulk + refresh for Elasticsearch, one
  transaction for SQLite) as chunks/s and per-document p50/p95, and the whole pipeline's wall time;
- search: ``SearchService.search`` as /search runs it (hybrid BM25 + kNN, RRF, neighbour
  expansion; reranking off; query vectors cached beforehand, so the numbers are the store's), p50/p95;
- each leg alone (BM25 k=15, kNN k=15) p50/p95, and how often the two stores agree on the top 10.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from carrag.services.container import Container, build_container
from carrag.services.embedders.local_onnx import LocalOnnxEmbedder
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.models import SearchFilters
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.settings import Settings

ROOT = Path(__file__).resolve().parents[1]

SCIFACT = Path("/work/shared/data/scifact-dev")


def load_corpus(corpus: Path | None, query_file: Path | None, docs: int, queries: int) -> tuple[list, list]:
    if corpus is None and (SCIFACT / "corpus.jsonl").is_file():
        corpus, query_file = SCIFACT / "corpus.jsonl", SCIFACT / "queries.jsonl"
    if corpus is not None:
        documents = []
        with corpus.open() as lines:
            for line in lines:
                row = json.loads(line)
                documents.append((f"doc-{row['_id']}", f"{row.get('title', '')}\n\n{row['text']}".strip()))
                if len(documents) >= docs:
                    break
        questions = []
        if query_file is not None and query_file.is_file():
            with query_file.open() as lines:
                questions = [json.loads(line)["text"] for line in lines][:queries]
        return documents, questions or [text.split(".")[0] for _, text in documents[:queries]]
    import pymupdf

    pdf = pymupdf.open(ROOT / "tests" / "fixtures" / "2019_Ford_F150_Owners_Manual.pdf")
    documents = [(f"page-{n}", page.get_text()) for n, page in enumerate(pdf) if page.get_text().strip()]
    return documents[:docs], ["Which oil filter fits the engine?", "tire pressure", "towing a trailer"][:queries]


def percentiles(values: list[float]) -> str:
    if not values:
        return "n/a"
    p50, p95 = np.percentile(values, [50, 95])
    return f"p50 {p50:7.1f} ms  p95 {p95:7.1f} ms"


async def measure(container: Container, documents: list, questions: list, vectors: list) -> dict:
    write_ms, chunks = [], 0
    started = time.perf_counter()
    for source_id, text in documents:
        result = await container.ingestion.ingest_text(text, source_id, IngestCommand(source_id=source_id))
        write_ms.append(result.timings_ms["index"])
        chunks += result.chunk_count
    wall = time.perf_counter() - started

    search_ms, lexical_ms, knn_ms, tops = [], [], [], []
    for question, vector in zip(questions, vectors, strict=True):
        step = time.perf_counter()
        await container.search.search(SearchQuery(question, top_k=5, rerank=False))
        search_ms.append((time.perf_counter() - step) * 1000)
        step = time.perf_counter()
        lexical = await container.store.lexical_search(question, 15, SearchFilters())
        lexical_ms.append((time.perf_counter() - step) * 1000)
        step = time.perf_counter()
        semantic = await container.store.vector_search(vector, 15, SearchFilters())
        knn_ms.append((time.perf_counter() - step) * 1000)
        tops.append(([h.chunk.source_id for h in lexical[:10]], [h.chunk.source_id for h in semantic[:10]]))
    return {
        "chunks": chunks,
        "write_ms": write_ms,
        "wall_s": wall,
        "search_ms": search_ms,
        "lexical_ms": lexical_ms,
        "knn_ms": knn_ms,
        "tops": tops,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--query-file", type=Path)
    parser.add_argument("--join", type=int, default=1, help="corpus entries per ingested document")
    parser.add_argument(
        "--es-url", default=os.environ.get("ELASTICSEARCH_URL"), help="a running Elasticsearch node (ELASTICSEARCH_URL)"
    )
    args = parser.parse_args()
    if not args.es_url:
        parser.error("--es-url (or ELASTICSEARCH_URL) is required: see the docstring for starting a node")

    documents, questions = load_corpus(args.corpus, args.query_file, args.docs, args.queries)
    if args.join > 1:
        documents = [
            (documents[n][0], "\n\n".join(text for _, text in documents[n : n + args.join]))
            for n in range(0, len(documents), args.join)
        ]
    es_url = args.es_url
    backend = LocalOnnxEmbedder()
    print(f"{len(documents)} documents, {len(questions)} queries; load average {os.getloadavg()[0]:.1f}")

    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for store in ("sqlite", "elasticsearch"):
            settings = Settings(
                _env_file=None,
                data_dir=Path(scratch) / store,
                store=store,
                log_json=False,
                log_level="WARNING",
                elasticsearch_url=es_url,
                elasticsearch_index=f"carrag_compare_{uuid.uuid4().hex[:8]}",
            )
            container = await build_container(settings, embedding_backend=backend, llm=ExtractiveLLM("compare"))
            vectors = [await container.embedder.embed_query(q) for q in questions]  # cached from here on
            try:
                results[store] = await measure(container, documents, questions, vectors)
            finally:
                if store == "elasticsearch":
                    await container.store.wipe()
                    await container.store.client.indices.delete(index=settings.elasticsearch_index)
                await container.store.close()
                await container.fetcher.aclose()

    print()
    for store, result in results.items():
        written_s = sum(result["write_ms"]) / 1000
        print(f"{store}:")
        print(
            f"  ingest  {result['chunks']} chunks; store writes {result['chunks'] / written_s:8.0f} chunks/s "
            f"(per document {percentiles(result['write_ms'])}); whole pipeline {result['wall_s']:.1f} s"
        )
        print(f"  search  /search path (hybrid, expand, no rerank) {percentiles(result['search_ms'])}")
        print(f"          BM25 leg k=15 {percentiles(result['lexical_ms'])}")
        print(f"          kNN leg k=15  {percentiles(result['knn_ms'])}")
    pairs = list(zip(results["sqlite"]["tops"], results["elasticsearch"]["tops"], strict=True))
    same_knn = statistics.mean(a[1] == b[1] for a, b in pairs)
    bm25_overlap = statistics.mean(len(set(a[0]) & set(b[0])) / max(len(set(a[0]) | set(b[0])), 1) for a, b in pairs)
    print(
        f"\nagreement: identical kNN top-10 documents for {same_knn:.0%} of queries; "
        f"BM25 top-10 Jaccard overlap {bm25_overlap:.2f} (english analyzer vs FTS5 porter)"
    )


if __name__ == "__main__":
    asyncio.run(main())

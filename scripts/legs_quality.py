"""nDCG@10 of the embedded store's legs where they are not a plain caught-up index (issue 29;
docs/benchmarks.md, "Embedded vector index under ingest").

Usage: python scripts/legs_quality.py [SCIFACT_DIR] [WORK_DIR] [DOCUMENTS]
(DOCUMENTS: a seeded sample of the corpus, all by default)

1. BM25 while documents arrive: 90 % of the corpus ingested and indexed; the last 10 % written with
   tantivy's background catch-up held back, so the BM25 leg answers as a search during ingest does
   (tantivy as last published, the rows changed since scored apart: `changed_rows.py`); then tantivy caught up: the same
   store, the same queries. Likewise once 10 % of the documents are re-ingested with changed text
   and 2 % deleted.
2. kNN exactness on the whole corpus (no copies): the HNSW graph searched as above `EXACT_BELOW`
   rows, with wider searches and more candidates, against float32 brute force.

Only the queries with a judged document in the store count, split in two halves (alternate queries): a setting chosen on one is checked on the other.
A WORK_DIR whose store was built to the end skips to part 2 (an interrupted build resumes: the
documents already stored are not embedded again).
"""

import asyncio
import copy
import dataclasses
import random
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import psutil

from carrag.bench.beir import BeirDataset, load_beir
from carrag.bench.runner import eval_settings, ingest_corpus, score_run
from carrag.services.container import build_container
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.models import SearchFilters
from carrag.services.settings import get_settings
from carrag.services.stores.vector_segments import normalised

SCIFACT = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/scifact-dev")
WORK = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/carrag-legs-quality")
DOCUMENTS = int(sys.argv[3]) if len(sys.argv) > 3 else None
DEPTHS = (30, 100)  # chunks per leg: a 10-result query (top_k 10 x 3), and a deep list
NO_FILTER = SearchFilters()


def halves(scores: dict[str, float], qids: list[str]) -> str:
    first = np.mean([scores.get(q, 0.0) for q in qids[0::2]])
    second = np.mean([scores.get(q, 0.0) for q in qids[1::2]])
    return f"{np.mean([first, second]):.4f} (halves {first:.4f} / {second:.4f})"


def ndcg(dataset: BeirDataset, run: dict[str, list[str]]) -> dict[str, float]:
    _, per_query = score_run(dataset.qrels, run)
    return {qid: measures["nDCG@10"] for qid, measures in per_query.items()}


def documents_in_order(external_ids: list[str | None]) -> list[str]:
    return list(dict.fromkeys(e for e in external_ids if e is not None))


async def lexical_run(store, dataset: BeirDataset, k: int) -> dict[str, list[str]]:
    run = {}
    for qid, question in dataset.queries.items():
        hits = await store.lexical_search(question, k, NO_FILTER)
        run[qid] = documents_in_order([hit.chunk.external_id for hit in hits])
    return run


async def bm25_stale_against_caught_up(store, dataset: BeirDataset, label: str) -> None:
    indexes = store.indexes
    connection = sqlite3.connect(store.path)
    head = connection.execute("SELECT max(seq) FROM chunk_changes").fetchone()[0]
    changed = connection.execute(
        "SELECT count(DISTINCT chunk_rowid) FROM chunk_changes WHERE seq > ?", (indexes.lexical_seq,)
    ).fetchone()[0]
    chunks = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    connection.close()
    qids = list(dataset.queries)
    print(
        f"BM25 leg, {label}: {chunks} chunks, tantivy at {indexes.lexical_seq} of {head}, {changed} rows changed since"
    )
    stale = {k: ndcg(dataset, await lexical_run(store, dataset, k)) for k in DEPTHS}
    await store._read(indexes.catch_up_lexical)
    assert indexes.lexical_seq == head, (indexes.lexical_seq, head)
    for k in DEPTHS:
        caught_up = ndcg(dataset, await lexical_run(store, dataset, k))
        print(
            f"  k {k}: tantivy + the changed rows apart {halves(stale[k], qids)}; caught up {halves(caught_up, qids)}"
        )


def held_back(store) -> None:
    """Writes no longer schedule the background catch-up (a search never catches tantivy up)."""
    store._index_catch_up.schedule = lambda: None


def part(dataset: BeirDataset, records) -> BeirDataset:
    subset = copy.copy(dataset)
    subset.corpus = list(records)
    return subset


async def build(store_path: Path, dataset: BeirDataset) -> None:
    settings = eval_settings(get_settings(), store_path).model_copy(update={"embed_timeout": 1800.0})
    container = await build_container(settings, llm=ExtractiveLLM("bench"))
    store = container.store
    try:
        shuffled = dataset.corpus  # in sampled order
        cut = len(shuffled) * 9 // 10
        started = time.perf_counter()
        await ingest_corpus(container, part(dataset, shuffled[:cut]))
        await store.sync_indexes()
        print(f"ingested {cut} documents in {time.perf_counter() - started:.0f} s; load {psutil.getloadavg()}")
        held_back(store)
        await ingest_corpus(container, part(dataset, shuffled[cut:]))
        await bm25_stale_against_caught_up(store, dataset, "after 10 % more documents")
        await store.sync_indexes()
        revised = [dataclasses.replace(r, text=f"{r.text} (revised)") for r in shuffled[: len(shuffled) // 10]]
        await ingest_corpus(container, part(dataset, revised))
        for record in shuffled[len(shuffled) // 10 : len(shuffled) * 12 // 100]:
            document = await store.find_by_source(f"{dataset.name}:{record.doc_id}")
            await store.delete_document(document.document_id)
        await bm25_stale_against_caught_up(store, dataset, "after 10 % re-ingested with changed text, 2 % deleted")
    finally:
        await container.aclose()


async def knn_exactness(store_path: Path, dataset: BeirDataset) -> None:
    settings = eval_settings(get_settings(), store_path).model_copy(update={"embed_timeout": 1800.0})
    container = await build_container(settings, llm=ExtractiveLLM("bench"))
    try:
        await container.store.sync_indexes()
        questions = list(dataset.queries.items())
        queries = np.asarray(await container.embedder.backend.embed([q for _, q in questions], "query"), np.float32)
        graph = container.store.indexes.vectors.graph
        assert container.store.indexes.vectors.waiting == 0
        connection = sqlite3.connect(store_path)
        rows = connection.execute(
            "SELECT c.id, c.embedding, d.external_id FROM chunks c JOIN documents d USING (document_id)"
        ).fetchall()
        connection.close()
        ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        matrix = normalised(np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(len(rows), -1))
        position = {int(rowid): i for i, rowid in enumerate(ids)}
        external = [r[2] for r in rows]
        qids = [qid for qid, _ in questions]
        print(
            f"kNN leg on {len(rows)} chunks, {len(dataset.corpus)} documents, {len(qids)} queries; graph {len(graph)} vectors"
        )

        def ranked(positions: np.ndarray, query: np.ndarray, k: int) -> list[str]:
            scores = matrix[positions] @ query
            order = positions[np.argsort(-scores, kind="stable")[:k]]
            return documents_in_order([external[i] for i in order])

        def run_of(candidates, k: int) -> dict[str, float]:
            run = {}
            for qid, query in zip(qids, normalised(queries), strict=True):
                run[qid] = ranked(candidates(query, k), query, k)
            return ndcg(dataset, run)

        def exact(query: np.ndarray, k: int) -> np.ndarray:
            return np.arange(len(ids))

        def graph_search(expansion: int, times: int, exhaustive: bool = False):
            def candidates(query: np.ndarray, k: int) -> np.ndarray:
                graph.expansion_search = expansion
                keys = graph.search(query, times * k, exact=exhaustive).keys
                return np.fromiter((position[int(key)] for key in keys), np.int64)

            return candidates

        variants = [
            ("float32 brute force (exact)", exact),
            ("int8 exhaustive, 2k re-scored (<= 50,000 rows)", graph_search(96, 2, exhaustive=True)),
            ("graph ef 96, 2k re-scored (as shipped)", graph_search(96, 2)),
            ("graph ef 192, 2k re-scored", graph_search(192, 2)),
            ("graph ef 96, 4k re-scored", graph_search(96, 4)),
            ("graph ef 384, 2k re-scored", graph_search(384, 2)),
        ]
        for k in DEPTHS:
            for name, candidates in variants:
                started = time.perf_counter()
                scores = run_of(candidates, k)
                elapsed = (time.perf_counter() - started) / len(qids) * 1000
                print(f"  k {k}: {name}: nDCG@10 {halves(scores, qids)}; {elapsed:.2f} ms/query")
        graph.expansion_search = 96
        print(f"load {psutil.getloadavg()}")
    finally:
        await container.aclose()


async def main() -> None:
    full = load_beir(SCIFACT, "train")
    sample = random.Random(29).sample(full.corpus, len(full.corpus))[:DOCUMENTS]
    stored = {record.doc_id for record in sample}
    judged = [qid for qid in full.queries if stored & set(full.qrels[qid])]  # a judged document is stored
    dataset = BeirDataset(
        full.name, full.split, sample, {q: full.queries[q] for q in judged}, {q: full.qrels[q] for q in judged}
    )
    store_path = WORK / "store.db"
    if not (WORK / "built").exists():
        WORK.mkdir(parents=True, exist_ok=True)
        await build(store_path, dataset)
        (WORK / "built").touch()
    await knn_exactness(store_path, dataset)


asyncio.run(main())

"""The embedded store's two search legs at N chunks, store level, no HTTP (docs/benchmarks.md).

Usage: python scripts/store_legs.py N STORE.db [all|legs]   (SCIFACT_DIR, default ../shared/data/scifact-dev)
Grows STORE.db to N chunks (SciFact chunk texts copied, random 384-d unit vectors, 2,000-document
transactions), catches the indexes up, reopens, then times BM25, kNN, both, the old FTS5 leg (`all`)
and 4-chunk writes; prints peak RSS and disk size.
"""

import asyncio
import json
import os
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psutil

from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, SearchFilters
from carrag.services.stores.fts_query import fts_match_expression
from carrag.services.stores.sqlite import BM25_WEIGHTS, SqliteStore

N = int(sys.argv[1])
path = Path(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "all"
SCIFACT = Path(os.environ.get("SCIFACT_DIR", "../shared/data/scifact-dev"))
ID = EmbeddingIdentity("prof", 384)
texts = []
for line in (SCIFACT / "corpus.jsonl").read_text().splitlines():
    r = json.loads(line)
    t = r["text"]
    texts.append((r["title"], [t[i : i + 500] for i in range(0, max(len(t), 1), 400)]))
qs = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines()][:205]
rng = np.random.default_rng(0)
base = rng.standard_normal((len(texts), 384)).astype(np.float32)


def pct(xs):
    xs = sorted(xs)
    return f"p50 {xs[len(xs) // 2]:.2f} p95 {xs[int(len(xs) * 0.95)]:.2f} ms"


async def main():
    proc = psutil.Process()
    store = SqliteStore(path)
    t0 = time.time()
    await store.open()
    print("open", round(time.time() - t0, 2), "s")
    have = await store.count_chunks()
    t0 = time.time()
    copy = have
    while have < N:
        batch = []
        for i, (title, chunks) in enumerate(texts):
            if have >= N:
                break
            n = len(chunks)
            v = base[i] + 0.3 * rng.standard_normal((n, 384)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            doc = DocumentRecord(
                f"d{copy}-{i}", f"f{i}", f"s{copy}-{i}", "text", "h", n, [], {}, datetime.now(UTC).isoformat(), title
            )
            batch.append((doc, [Chunk(j, c, 0, len(c)) for j, c in enumerate(chunks)], v))
            have += n
            if len(batch) == 2000:
                await store.write_documents(batch, ID)
                batch = []
        if batch:
            await store.write_documents(batch, ID)
        copy += 1
    print("grow", round(time.time() - t0, 1), "s to", await store.count_chunks(), "rss", proc.memory_info().rss >> 20)
    t0 = time.time()
    await store.sync_indexes()
    print("sync", round(time.time() - t0, 1), "s", store.indexes.last_sync, "rss", proc.memory_info().rss >> 20)
    await store.close()
    t0 = time.time()
    await store.open()
    t1 = time.time()
    q = rng.standard_normal(384).astype(np.float32)
    await store.lexical_search(qs[0], 15, SearchFilters())
    await store.vector_search(q, 15, SearchFilters())
    print("reopen", round(t1 - t0, 3), "s; +first query", round(time.time() - t0, 3), "s")
    lex, knn, both = [], [], []
    for qq in qs[5:]:
        t = time.perf_counter()
        await store.lexical_search(qq, 15, SearchFilters())
        lex.append((time.perf_counter() - t) * 1000)
        v = rng.standard_normal(384).astype(np.float32)
        t = time.perf_counter()
        await store.vector_search(v, 15, SearchFilters())
        knn.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await asyncio.gather(store.lexical_search(qq, 15, SearchFilters()), store.vector_search(v, 15, SearchFilters()))
        both.append((time.perf_counter() - t) * 1000)
    print("bm25", pct(lex))
    print("knn", pct(knn))
    print("both", pct(both))
    if mode == "all":
        import sqlite3

        c = sqlite3.connect(path)
        fts = []
        w = ", ".join(str(x) for x in BM25_WEIGHTS)
        for qq in qs[5:60]:
            e = fts_match_expression(qq)
            t = time.perf_counter()
            c.execute(
                f"SELECT rowid, bm25(chunks_fts, {w}) AS rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 15",
                (e,),
            ).fetchall()
            fts.append((time.perf_counter() - t) * 1000)
        print("fts5 bm25 (old leg, rank+limit)", pct(fts))
    # write latency on the grown store
    wl = []
    for i in range(20):
        v = base[:4] / np.linalg.norm(base[:4], axis=1, keepdims=True)
        doc = DocumentRecord(f"w{i}", "f", f"w{i}", "text", "h", 4, [], {}, datetime.now(UTC).isoformat(), "t")
        t = time.perf_counter()
        await store.write_document(doc, [Chunk(j, texts[j][1][0], 0, 5) for j in range(4)], v, ID)
        wl.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    await store.vector_search(q, 15, SearchFilters())
    after = (time.perf_counter() - t) * 1000
    print("write 4-chunk doc", pct(wl), "; first search after 20 writes (catch-up)", round(after, 1), "ms")
    print("peak rss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10, "MB")
    await store.close()
    os.system(f"du -sh {path}* | tr '\\n' ' '")


asyncio.run(main())

"""`POST /search` on a grown embedded store, through the bench's own `bench_queries` (docs/benchmarks.md).

Usage: python scripts/search_at_scale.py STORE.db [SCIFACT_DIR]   (STORE.db grown by scripts/store_legs.py)
The store was grown with random vectors under a stand-in embedding identity; it is relabelled with the
configured embedder's so the app opens it (the figures are about speed, not relevance).
"""

import asyncio
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import psutil

from carrag.bench.beir import load_beir
from carrag.bench.measuring import PeakRss
from carrag.bench.query_speed import bench_queries
from carrag.bench.runner import eval_settings
from carrag.services.container import build_container
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.settings import get_settings


def disk_bytes(p):
    return sum(os.path.getsize(str(p) + s) for s in ("", "-wal") if os.path.exists(str(p) + s))


db = Path(sys.argv[1])
SCIFACT = Path(sys.argv[2] if len(sys.argv) > 2 else "../shared/data/scifact-dev")


async def main():
    settings = eval_settings(get_settings(), db).model_copy(update={"embed_cache_size": 0})
    print("load", psutil.getloadavg())
    with PeakRss() as rss:
        t0 = time.perf_counter()
        container = await build_container(settings, llm=ExtractiveLLM("bench"))
        ident = await container.embedder.embedding_identity()
        await container.aclose()
        c = sqlite3.connect(db)
        c.execute("UPDATE meta SET value=? WHERE key='embedding_model'", (ident.model,))
        c.commit()
        c.close()
        t0 = time.perf_counter()
        container = await build_container(settings, llm=ExtractiveLLM("bench"))
        open_ms = (time.perf_counter() - t0) * 1000
        qs = list(load_beir(SCIFACT, "train").queries.values())[:106]
        search, _, _note, embed, first_ms, stages = await bench_queries(container, qs, 5)
    print(
        json.dumps(
            {
                "chunks": await container.store.count_chunks(),
                "search": search.as_dict(),
                "embed_query": embed.as_dict(),
                "open_ms": round(open_ms, 1),
                "first_query_ms": round(first_ms, 1),
                "stages": stages,
                "peak_rss_mb": round(rss.peak_mb),
                "disk_mb": round(disk_bytes(db) / 2**20),
                "load_after": psutil.getloadavg(),
            }
        )
    )
    await container.aclose()


asyncio.run(main())

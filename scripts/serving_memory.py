"""Where the serving process's memory goes at scale (issue 15): build a store the way `carrag bench`
grows it, then serve it from a fresh process and break its resident set down by mapping.

Usage:
  python scripts/serving_memory.py build STORE.db CHUNKS [SCIFACT_DIR]   # 200 SciFact documents embedded,
                                                                         # copied with their vectors to CHUNKS
  python scripts/serving_memory.py serve STORE.db [QUERIES] [SCIFACT_DIR] # open + QUERIES /search, then smaps

`serve` prints the bench's figures (the same `bench_queries`, `PeakRss`) and, after the queries, the
process's /proc/self/smaps grouped by mapping (anonymous vs file-backed, clean vs dirty), with
tracemalloc's view of the Python heap when CARRAG_TRACEMALLOC=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

import psutil

from carrag.bench.beir import load_beir
from carrag.bench.ingest_speed import prepare_documents, raw_embed
from carrag.bench.measuring import PeakRss, disk_bytes
from carrag.bench.query_speed import bench_queries, grow_store
from carrag.bench.runner import eval_settings
from carrag.services.container import build_container
from carrag.services.llms.extractive import ExtractiveLLM
from carrag.services.settings import get_settings


def smaps_by_mapping(pid: int | str = "self") -> list[dict]:
    """One entry per mapping name: Rss, anonymous, file-backed clean/dirty (kB)."""
    groups: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(None, 5)
            name = parts[5] if len(parts) > 5 else "[anon]"
            name = re.sub(r"/tmp/[^/]+/", "/tmp/…/", name)
            continue
        key, _, value = line.partition(":")
        if key in ("Rss", "Anonymous", "Private_Dirty", "Shared_Clean", "Private_Clean", "Shared_Dirty"):
            groups[name][key] += int(value.split()[0])
    rows = [{"mapping": k, **v} for k, v in groups.items()]
    return sorted(rows, key=lambda r: -r.get("Rss", 0))


def rollup(pid: int | str = "self") -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        out[key] = int(value.split()[0]) // 1024
    return out


async def build(db: Path, chunks: int, scifact: Path) -> None:
    settings = eval_settings(get_settings(), db).model_copy(update={"embed_cache_size": 0})
    container = await build_container(settings, llm=ExtractiveLLM("bench"))
    dataset = load_beir(scifact, "train")
    dataset.corpus = dataset.corpus[:200]
    documents = prepare_documents(dataset, settings)
    started = time.perf_counter()
    await raw_embed(container.embedder.backend, documents, settings.embed_batch_size)
    print("embedded", round(time.perf_counter() - started, 1), "s")
    started = time.perf_counter()
    total = await grow_store(container, documents, chunks, dataset.name, [0])
    print("grown to", total, "in", round(time.perf_counter() - started, 1), "s")
    started = time.perf_counter()
    await container.store.sync_indexes()  # type: ignore[attr-defined]
    print("indexes", round(time.perf_counter() - started, 1), "s; disk", disk_bytes(db) >> 20, "MB")
    await container.aclose()


async def serve(db: Path, queries: int, scifact: Path) -> None:
    if os.environ.get("CARRAG_TRACEMALLOC"):
        tracemalloc.start(10)
    settings = eval_settings(get_settings(), db).model_copy(update={"embed_cache_size": 0})
    print("load", psutil.getloadavg())
    process = psutil.Process()
    with PeakRss() as rss:
        container = await build_container(settings, llm=ExtractiveLLM("bench"))
        after_models = process.memory_info().rss >> 20
        await container.store.close()
        before_open = process.memory_info().rss >> 20
        started = time.perf_counter()
        await container.store.open()
        open_ms = (time.perf_counter() - started) * 1000
        after_open = process.memory_info().rss >> 20
        questions = list(load_beir(scifact, "train").queries.values())[: queries + 6]
        search, _, _, embed, first_ms, stages = await bench_queries(container, questions, 5)
    figures = {
        "chunks": await container.store.count_chunks(),
        "search": search.as_dict(),
        "embed_query": embed.as_dict(),
        "open_ms": round(open_ms, 1),
        "first_query_ms": round(first_ms, 1),
        "stages": stages,
        "rss_mb": {"after_container": after_models, "before_open": before_open, "after_open": after_open},
        "peak_rss_mb": round(rss.peak_mb),
        "rollup_mb": rollup(),
        "load": psutil.getloadavg(),
    }
    print(json.dumps(figures, indent=1))
    print(f"{'Rss MB':>8} {'anon':>8} {'file cl':>8} {'dirty':>8}  mapping")
    for row in smaps_by_mapping()[:25]:
        clean = (row.get("Shared_Clean", 0) + row.get("Private_Clean", 0)) >> 10
        print(
            f"{row.get('Rss', 0) >> 10:8} {row.get('Anonymous', 0) >> 10:8} {clean:8} "
            f"{row.get('Private_Dirty', 0) >> 10:8}  {row['mapping']}"
        )
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        print("python heap (tracemalloc) current", current >> 20, "MB, peak", peak >> 20, "MB")
        for stat in tracemalloc.take_snapshot().statistics("lineno")[:12]:
            print("  ", stat)
    await container.aclose()


if __name__ == "__main__":
    command, db = sys.argv[1], Path(sys.argv[2])
    if command == "build":
        asyncio.run(
            build(db, int(sys.argv[3]), Path(sys.argv[4] if len(sys.argv) > 4 else "../shared/data/scifact-dev"))
        )
    else:
        count = int(sys.argv[3]) if len(sys.argv) > 3 else 200
        asyncio.run(serve(db, count, Path(sys.argv[4] if len(sys.argv) > 4 else "../shared/data/scifact-dev")))

"""The local embedder's query session (LOCAL_EMBEDDING_QUERY_THREADS): one query's latency and CPU,
alone and with one core kept busy, old (0: queries on the all-cores session) against new (1); batch
ingest throughput; resident memory; and the token sweep behind QUERY_SESSION_MAX_TOKENS.

Usage (docs/benchmarks.md, "Query embedding on one thread"):
  python scripts/query_embedding_threads.py [ROUNDS] [SCIFACT_DIR]

Every figure comes from a fresh process per (setting, condition), the settings alternating, ROUNDS
times (default 3); the table gives the median over rounds. "busy core" is a `yes > /dev/null` child
started before and killed (by its pid) after the measurement. CPU per query is the process's CPU
time over the whole loop (the queries and the 2 ms gaps between them, where spinning threads burn
it) divided by the number of queries. Ingest is 256 chunk-sized texts in calls of 32 (EMBED_BATCH_SIZE),
alone. A round takes ~1–2 minutes, with a 20 s pause between rounds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_SCIFACT = Path("/work/shared/data/scifact-dev")
QUERIES = 200
INGEST_TEXTS = 256


def vm_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def chunk_texts(scifact: Path) -> list[str]:
    """INGEST_TEXTS chunk-sized texts: SciFact abstracts cut at word boundaries into pieces of at most
    CHUNK_SIZE's default, 500 characters (~100 tokens)."""
    texts: list[str] = []
    with (scifact / "corpus.jsonl").open() as corpus:
        for document in map(json.loads, corpus):
            piece = ""
            for word in f"{document['title']}. {document['text']}".split():
                if len(piece) + len(word) + 1 > 500:
                    texts.append(piece)
                    piece = ""
                piece = f"{piece} {word}" if piece else word
            texts.append(piece)
            if len(texts) >= INGEST_TEXTS:
                return texts[:INGEST_TEXTS]
    return texts


def busy_core(on: bool) -> subprocess.Popen[bytes] | None:
    return subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if on else None


def stop(child: subprocess.Popen[bytes] | None) -> None:
    if child is not None:
        child.kill()  # our own child, by its pid
        child.wait()


def child(kind: str, query_threads: int, busy: bool, scifact: Path) -> dict[str, float]:
    """One measurement in this process (a fresh one per call of the driver)."""
    rss_start = vm_rss_mb()
    from carrag.services.embedders.local_onnx import LocalOnnxEmbedder

    embedder = LocalOnnxEmbedder(query_threads=query_threads)
    result: dict[str, float] = {"rss_loaded_mb": vm_rss_mb(), "rss_start_mb": rss_start}
    one_thread_runs = [0]
    one_thread_session = embedder._query_session
    if one_thread_session is not embedder._session:  # count the runs the one-thread session gets

        class Counting:
            def run(self, *args: Any) -> Any:
                one_thread_runs[0] += 1
                return one_thread_session.run(*args)

        embedder._query_session = Counting()
    if kind == "queries":
        questions = [json.loads(line)["text"] for line in (scifact / "queries.jsonl").open()][: QUERIES + 20]
        for text in questions[:20]:
            embedder.embed_sync([text])
        one_thread_runs[0] = 0
        load = busy_core(busy)
        try:
            time.sleep(0.2)
            walls = []
            cpu_start = time.process_time()
            for text in questions[20:]:
                started = time.perf_counter()
                embedder.embed_sync([text])
                walls.append(time.perf_counter() - started)
                time.sleep(0.002)
            cpu = time.process_time() - cpu_start
        finally:
            stop(load)
        walls.sort()
        result |= {
            "p50_ms": statistics.median(walls) * 1e3,
            "p95_ms": walls[int(0.95 * len(walls))] * 1e3,
            "cpu_ms": cpu / len(walls) * 1e3,
            "rss_after_mb": vm_rss_mb(),
            "one_thread_runs": one_thread_runs[0],
        }
    elif kind == "ingest":
        texts = chunk_texts(scifact)
        embedder.embed_sync(texts[:32])
        one_thread_runs[0] = 0
        load = busy_core(busy)
        try:
            started = time.perf_counter()
            for offset in range(0, len(texts), 32):  # EMBED_BATCH_SIZE's default
                embedder.embed_sync(texts[offset : offset + 32])
            elapsed = time.perf_counter() - started
        finally:
            stop(load)
        result |= {
            "texts_per_s": len(texts) / elapsed,
            "rss_after_mb": vm_rss_mb(),
            "one_thread_runs": one_thread_runs[0],
        }
    elif kind == "sweep":
        import numpy as np

        session = one_thread_session  # the main session when query_threads is 0
        cells = {}
        for width in (8, 16, 32, 64, 128, 256):
            ids = np.random.default_rng(0).integers(1000, 20000, (1, width)).astype(np.int64)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            for _ in range(3):
                session.run(None, feeds)
            runs = max(10, 1600 // width)
            walls = []
            cpu_start = time.process_time()
            for _ in range(runs):
                started = time.perf_counter()
                session.run(None, feeds)
                walls.append(time.perf_counter() - started)
                time.sleep(0.002)
            cells[f"{width}_p50_ms"] = statistics.median(walls) * 1e3
            cells[f"{width}_cpu_ms"] = (time.process_time() - cpu_start) / runs * 1e3
        result |= cells
    return result


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        kind, query_threads, busy, scifact = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", Path(sys.argv[5])
        print(json.dumps(child(kind, query_threads, busy, scifact)))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    scifact = Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_SCIFACT
    print(f"start: load average {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    cases = [
        (kind, threads, busy)
        for kind in ("queries", "ingest", "sweep")
        for busy in ((False, True) if kind == "queries" else (False,))
        for threads in (0, 1)
    ]
    results: dict[tuple[str, int, bool], list[dict[str, float]]] = {case: [] for case in cases}
    for round_ in range(rounds):
        for kind, threads, busy in cases if round_ % 2 == 0 else cases[::-1]:
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, __file__, "--child", kind, str(threads), "1" if busy else "0", str(scifact)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[(kind, threads, busy)].append(json.loads(out))
            print(f"  {kind} query_threads={threads} busy={busy}: {time.perf_counter() - started:.1f} s {out.strip()}")
        print(f"round {round_ + 1}/{rounds} done, load average {os.getloadavg()}", flush=True)
        if round_ + 1 < rounds:
            time.sleep(20)  # the machine is shared: a pause between rounds
    for (kind, threads, busy), runs in results.items():
        keys = [k for k in runs[0] if not k.startswith("rss_start")]
        cells = ", ".join(f"{k} {statistics.median(r[k] for r in runs):.2f}" for k in keys)
        setting = "old (QUERY_THREADS=0)" if threads == 0 else "new (QUERY_THREADS=1)"
        print(f"{kind:8} {setting:22} {'busy core' if busy else 'alone':9} | {cells}")
    print(f"end: load average {os.getloadavg()}")


if __name__ == "__main__":
    main()

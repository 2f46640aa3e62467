"""The local embedder's threading: one session with one onnxruntime thread per run, a batch's runs on
LOCAL_EMBEDDING_THREADS concurrent workers (new), against main's before it: one session with an
all-cores intra-op pool (spinning on), runs one after the other (old). One query's latency and CPU,
alone and with one core kept busy; batch ingest throughput; resident memory.

Usage (docs/benchmarks.md, "Query embedding on one thread"):
  python scripts/query_embedding_threads.py [ROUNDS] [SCIFACT_DIR]
  python scripts/query_embedding_threads.py runs [ROUNDS] [SCIFACT_DIR]   # the run size (RUN_ROWS)

`runs` compares, in one process and alternating, the 256-text ingest in calls of 32 through the old
design (runs of 16, and of 4) and the new one with runs of 16, 4 and 2 texts, ROUNDS times (default
4), and prints texts/s per round and the medians.

Every figure comes from a fresh process per (design, condition), old and new alternating, ROUNDS
times (default 3); the table gives the median over rounds. "busy core" is a `yes > /dev/null` child
started before and killed (by its pid) after the measurement. CPU per query is the process's CPU
time over the whole loop (the queries and the 2 ms gaps between them, where spinning threads burn
it) divided by the number of queries. Ingest is 256 chunk-sized texts in calls of 32
(EMBED_BATCH_SIZE) and, for small documents, of 8, alone. RSS: `VmRSS` after loading and after the
ingest, `VmHWM` (the peak) over the ingest. A round takes ~1 minute, with a 20 s pause between rounds.
"""

from __future__ import annotations

import asyncio
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


def vm(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


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


def embedder(design: str) -> Any:
    """new: the embedder as it is. old: main's, one session with an all-cores intra-op pool (spinning
    on, onnxruntime's default) and the runs of 16 one after the other in the calling thread."""
    import numpy as np

    from carrag.services.embedders import local_onnx
    from carrag.services.embedders.base import l2_normalise

    if design == "new":
        return local_onnx.LocalOnnxEmbedder()

    def all_cores_session(onnxruntime: Any, model_path: Path) -> Any:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        return onnxruntime.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])

    local_onnx._session = all_cores_session
    old = local_onnx.LocalOnnxEmbedder(threads=1)  # the worker pool stays unused

    def embed_sync(texts: list[str]) -> Any:
        encodings = old._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        output = np.empty((len(texts), local_onnx.DIMENSION), dtype=np.float32)
        for offset in range(0, len(order), 16):
            group = order[offset : offset + 16]
            output[group] = old._run([encodings[i].ids for i in group])
        return l2_normalise(output)

    old.embed_sync = embed_sync  # type: ignore[method-assign,assignment]
    return old


def child(kind: str, design: str, busy: bool, scifact: Path) -> dict[str, float]:
    """One measurement in this process (a fresh one per call of the driver). Every call goes through
    ``embed`` (the embedder's executor thread), as in the service: where a run's buffers are freed
    decides what RSS keeps."""
    model = embedder(design)
    loop = asyncio.new_event_loop()

    def embed(texts: list[str]) -> Any:
        return loop.run_until_complete(model.embed(texts, "document"))

    result: dict[str, float] = {"rss_loaded_mb": vm("VmRSS")}
    if kind == "queries":
        questions = [json.loads(line)["text"] for line in (scifact / "queries.jsonl").open()][: QUERIES + 20]
        for text in questions[:20]:
            embed([text])
        load = busy_core(busy)
        try:
            time.sleep(0.2)
            walls = []
            cpu_start = time.process_time()
            for text in questions[20:]:
                started = time.perf_counter()
                embed([text])
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
        }
    else:
        size = int(kind.removeprefix("ingest"))
        texts = chunk_texts(scifact)
        embed(texts[:size])
        started = time.perf_counter()
        for offset in range(0, len(texts), size):
            embed(texts[offset : offset + size])
        elapsed = time.perf_counter() - started
        result |= {"texts_per_s": len(texts) / elapsed, "rss_after_mb": vm("VmRSS"), "peak_rss_mb": vm("VmHWM")}
    return result


def run_sizes(rounds: int, scifact: Path) -> None:
    from carrag.services.embedders import local_onnx

    new = embedder("new")
    old = embedder("old")  # patches local_onnx._session: build new first
    texts = chunk_texts(scifact)

    def old_call(batch: list[str], rows: int) -> None:
        encodings = old._tokenizer.encode_batch(batch)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        for offset in range(0, len(order), rows):
            old._run([encodings[i].ids for i in order[offset : offset + rows]])

    def ingest(variant: str) -> float:
        rows = int(variant.split()[1])
        local_onnx.RUN_ROWS = rows
        started = time.perf_counter()
        for offset in range(0, len(texts), 32):
            batch = texts[offset : offset + 32]
            old_call(batch, rows) if variant.startswith("old") else new.embed_sync(batch)
        return len(texts) / (time.perf_counter() - started)

    variants = ["old 16", "old 4", "new 16", "new 4", "new 2"]
    for variant in variants:
        ingest(variant)  # warm up
    results: dict[str, list[float]] = {variant: [] for variant in variants}
    print(f"start: load average {os.getloadavg()}", flush=True)
    for round_ in range(rounds):
        for variant in variants if round_ % 2 == 0 else variants[::-1]:
            results[variant].append(ingest(variant))
        cells = ", ".join(f"{v} {r[-1]:.1f}" for v, r in results.items())
        print(f"round {round_ + 1}: {cells} texts/s, load average {os.getloadavg()[0]:.2f}", flush=True)
    print("median: " + ", ".join(f"{v} {statistics.median(r):.1f}" for v, r in results.items()) + " texts/s")


def main() -> None:
    if sys.argv[1:2] == ["runs"]:
        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
        run_sizes(rounds, Path(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_SCIFACT)
        return
    if sys.argv[1:2] == ["--child"]:
        kind, design, busy, scifact = sys.argv[2], sys.argv[3], sys.argv[4] == "1", Path(sys.argv[5])
        print(json.dumps(child(kind, design, busy, scifact)))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    scifact = Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_SCIFACT
    print(f"start: load average {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    cases = [
        (kind, design, busy)
        for kind in ("queries", "ingest32", "ingest8")
        for busy in ((False, True) if kind == "queries" else (False,))
        for design in ("old", "new")
    ]
    results: dict[tuple[str, str, bool], list[dict[str, float]]] = {case: [] for case in cases}
    for round_ in range(rounds):
        for kind, design, busy in cases if round_ % 2 == 0 else cases[::-1]:
            started = time.perf_counter()
            out = subprocess.run(
                [sys.executable, __file__, "--child", kind, design, "1" if busy else "0", str(scifact)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[(kind, design, busy)].append(json.loads(out))
            print(f"  {kind} {design} busy={busy}: {time.perf_counter() - started:.1f} s {out.strip()}", flush=True)
        print(f"round {round_ + 1}/{rounds} done, load average {os.getloadavg()}", flush=True)
        if round_ + 1 < rounds:
            time.sleep(20)  # the machine is shared: a pause between rounds
    for (kind, design, busy), runs in results.items():
        cells = ", ".join(f"{k} {statistics.median(r[k] for r in runs):.2f}" for k in runs[0])
        print(f"{kind:8} {design} {'busy core' if busy else 'alone':9} | {cells}")
    print(f"end: load average {os.getloadavg()}")


if __name__ == "__main__":
    main()

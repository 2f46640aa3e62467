"""How long a folder sync of unchanged files takes against the first sync that ingested them
(docs/benchmarks.md, "Folder sync"; issue 28: under 10 %).

Usage: python scripts/sync_speed.py [--files 1000] [--rounds 5] [--dataset ../shared/data/scifact-dev]
                                    [--elasticsearch http://127.0.0.1:<port>]

Writes ``--files`` text files (SciFact abstracts, one per file: real text of ~1,500 characters) into a
temporary folder, then times, on a fresh store (SQLite in a temporary DATA_DIR, or an index of its own on
``--elasticsearch``, deleted afterwards) with the local embedder and LLM=none:
  first     — the sync that ingests them all (parse, tag, chunk, embed, write);
  unchanged — ``--rounds`` syncs of the same folder, nothing changed (each file: one stat);
  touched   — one sync after every file's modification time moved (each file read and hashed once,
              nothing parsed).
Each is a whole sync job as `carrag sync` runs it (`SyncService.sync_folder`, the job's claim, its final
record). Prints the seconds of each and the unchanged (median) and touched syncs as a share of the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from carrag.services.container import Container, build_container
from carrag.services.jobs import Job
from carrag.services.settings import Settings

DATASET = Path("../shared/data/scifact-dev")  # beside the checkout, as `carrag bench` expects it


def write_folder(folder: Path, dataset: Path, files: int) -> None:
    with (dataset / "corpus.jsonl").open() as corpus:
        for number, line in enumerate(corpus):
            if number == files:
                return
            record = json.loads(line)
            (folder / f"{record['_id']}.txt").write_text(f"{record.get('title', '')}\n\n{record['text']}\n")
    raise SystemExit(f"{dataset} has fewer than {files} documents")


async def timed_sync(container: Container, folder: Path) -> tuple[float, Job]:
    started = time.perf_counter()
    job = await container.sync.sync_folder(str(folder), container.requests.ingest())
    task = job.task
    if task is not None:
        await task  # the job's final record is written: the next sync may claim its id
    return time.perf_counter() - started, job


async def main(arguments: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="carrag-sync-speed-") as scratch:
        folder = Path(scratch, "folder")
        folder.mkdir()
        write_folder(folder, arguments.dataset, arguments.files)
        values: dict[str, object] = {"data_dir": Path(scratch, "data"), "llm": "none", "log_json": False}
        if arguments.elasticsearch:
            values.update(
                store="elasticsearch",
                elasticsearch_url=arguments.elasticsearch,
                elasticsearch_index=f"carrag_sync_speed_{uuid.uuid4().hex[:8]}",
            )
        container = await build_container(Settings(_env_file=None, **values))  # type: ignore[call-arg]
        try:
            first, job = await timed_sync(container, folder)
            assert job.report is not None and job.report.counts["added"] == arguments.files, job.report
            unchanged = []
            for _ in range(arguments.rounds):
                seconds, job = await timed_sync(container, folder)
                assert job.report is not None and job.report.counts["unchanged"] == arguments.files, job.report
                unchanged.append(seconds)
            later = time.time() + 60
            for path in folder.iterdir():
                os.utime(path, (later, later))
            touched, job = await timed_sync(container, folder)
            assert job.report is not None and job.report.counts["unchanged"] == arguments.files, job.report
        finally:
            if arguments.elasticsearch:  # the alias's indices, its originals' and its jobs' (named: no wildcards)
                client = container.store.client  # type: ignore[attr-defined]
                names = list(await client.indices.get(index=f"{container.settings.elasticsearch_index}*"))
                if names:
                    await client.indices.delete(index=",".join(names), ignore_unavailable=True)
            await container.aclose()
    median = statistics.median(unchanged)
    print(f"store: {'elasticsearch' if arguments.elasticsearch else 'sqlite'}, files: {arguments.files}")
    print(f"first sync (ingests all): {first:.2f} s")
    print(f"unchanged sync: median {median:.3f} s of {', '.join(f'{s:.3f}' for s in unchanged)}")
    print(f"touched sync (every file hashed): {touched:.3f} s")
    print(f"unchanged / first: {median / first:.2%}; touched / first: {touched / first:.2%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--elasticsearch", help="URL of an Elasticsearch node (default: SQLite)")
    arguments = parser.parse_args()
    if not (arguments.dataset / "corpus.jsonl").is_file():
        sys.exit(f"no corpus.jsonl in {arguments.dataset}")
    asyncio.run(main(arguments))

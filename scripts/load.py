"""Bounded load test: concurrent clients mixing /search, /query/stream and file ingests.

    .venv/bin/python scripts/load.py                      # 50 clients, 20 s, LLM=none, own server
    .venv/bin/python scripts/load.py --duration 60 --llm local
    .venv/bin/python scripts/load.py --url http://127.0.0.1:8000 --api-key KEY

Without ``--url`` it starts ``uvicorn carrag.api.main:app_factory`` on 127.0.0.1 with a fresh temporary
data directory (and no setting from the environment or a .env file), samples the server's resident
memory, and checks the SQLite file's integrity after the server has stopped. Traffic goes only to
the given URL (loopback by default); every loop is bounded by ``--duration``.

It prints requests, answers by status, latency percentiles per route and peak server memory, then
verifies: no 5xx and no transport errors or timeouts; every ingest answered 200 is listed exactly
once afterwards (nothing lost, nothing duplicated); peak memory under ``--max-rss-mb``. The exit
status is 0 only when every check passes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

QUESTIONS = [
    "What is the recommended tire pressure?",
    "How often should the engine oil be changed?",
    "Which coolant should be used?",
    "What is the towing capacity?",
    "How do I check the brake fluid level?",
    "When should the cabin air filter be replaced?",
    "What torque do the wheel nuts need?",
    "How do I reset the maintenance reminder?",
]
TOPICS = [
    "tire pressure",
    "engine oil",
    "coolant",
    "towing",
    "brake fluid",
    "cabin air filter",
    "wheel nuts",
    "battery",
]


def document_text(client: int, number: int) -> bytes:
    """A small, distinct maintenance note (distinct text: no embedding-cache shortcuts)."""
    rng = random.Random(client * 100_003 + number)
    lines = [f"Maintenance note {client}-{number}."]
    for _ in range(rng.randint(4, 12)):
        topic = rng.choice(TOPICS)
        lines.append(
            f"For unit {rng.randint(1, 10**6)}, check the {topic} every {rng.randint(1, 24)} months or "
            f"{rng.randint(1, 30) * 1000} miles; the limit is {rng.randint(10, 99)} units."
        )
    return "\n\n".join(lines).encode()


# --- the server under test ---------------------------------------------------------------------
@dataclass
class Server:
    url: str
    process: subprocess.Popen | None = None
    data_dir: Path | None = None
    rss_samples: list[int] = field(default_factory=list)
    integrity: list[str] | None = None  # store problems found after the server stopped


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def started_server(args: argparse.Namespace) -> Iterator[Server]:
    from carrag.bench.server import clean_environment, stop_process

    with tempfile.TemporaryDirectory(prefix="carrag-load-") as tmp:
        data_dir = Path(tmp)
        port = free_port()
        env = clean_environment()
        env.update(
            {
                "DATA_DIR": str(data_dir),
                "LLM": args.llm,
                "LOG_LEVEL": "WARNING",
                "LOG_JSON": "false",
                "PER_HOST_DELAY": "0",
                "PYTHONPATH": str(REPO),
            }
        )
        for assignment in args.set:
            key, _, value = assignment.partition("=")
            env[key.upper()] = value
        log = (data_dir / "server.log").open("wb")
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "carrag.api.main:app_factory",
                "--factory",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            cwd=data_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        server = Server(f"http://127.0.0.1:{port}", process, data_dir)
        try:
            wait_until_up(server, timeout=180)
            yield server
        finally:
            stop_process(process, grace_seconds=30)
            log.close()
            server.integrity = store_integrity(data_dir / "carrag.db")
            if process.returncode not in (0, -15):
                print(
                    f"server exited with {process.returncode}; its log:\n"
                    + (data_dir / "server.log").read_text(errors="replace")[-4000:]
                )


def wait_until_up(server: Server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process is not None and server.process.poll() is not None:
            raise SystemExit(f"the server exited with {server.process.returncode} before answering")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise SystemExit(f"the server did not answer /health within {timeout:.0f}s")


async def sample_rss(server: Server, stop: asyncio.Event) -> None:
    if server.process is None:
        return
    import psutil

    process = psutil.Process(server.process.pid)
    while not stop.is_set():
        with contextlib.suppress(psutil.Error):
            server.rss_samples.append(process.memory_info().rss)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.25)


# --- the clients -------------------------------------------------------------------------------
@dataclass
class Outcome:
    route: str
    status: str  # HTTP status, "timeout" or "transport-error"
    seconds: float
    first_byte: float | None = None
    note: str = ""


@dataclass
class Record:
    outcomes: list[Outcome] = field(default_factory=list)
    ingested: dict[str, str] = field(default_factory=dict)  # document_id -> source_id (200 answers)
    abandoned_ingests: list[str] = field(default_factory=list)  # source ids whose answer never came
    stream_events: Counter = field(default_factory=Counter)


async def do_search(client: httpx.AsyncClient, rng: random.Random, record: Record) -> None:
    started = time.perf_counter()
    response = await client.post("/search", json={"question": rng.choice(QUESTIONS), "top_k": 5})
    record.outcomes.append(Outcome("/search", str(response.status_code), time.perf_counter() - started))


async def do_stream(client: httpx.AsyncClient, rng: random.Random, record: Record) -> None:
    started = time.perf_counter()
    first_byte = None
    async with client.stream("POST", "/query/stream", json={"question": rng.choice(QUESTIONS)}) as response:
        last_event = ""
        async for line in response.aiter_lines():
            if first_byte is None:
                first_byte = time.perf_counter() - started
            if line.startswith("event:"):
                last_event = line.split(":", 1)[1].strip()
        if response.status_code == 200:
            record.stream_events[last_event or "(none)"] += 1
    record.outcomes.append(
        Outcome("/query/stream", str(response.status_code), time.perf_counter() - started, first_byte, note=last_event)
    )


async def do_ingest(client: httpx.AsyncClient, client_id: int, number: int, record: Record) -> None:
    name = f"load-{client_id}-{number}.txt"
    started = time.perf_counter()
    try:
        response = await client.post("/ingest/file", files={"file": (name, document_text(client_id, number))})
    except (httpx.TimeoutException, httpx.TransportError):
        record.abandoned_ingests.append(name)
        raise
    record.outcomes.append(Outcome("/ingest/file", str(response.status_code), time.perf_counter() - started))
    if response.status_code == 200:
        body = response.json()
        record.ingested[body["document_id"]] = body["source_id"]


async def client_loop(
    client_id: int, base: httpx.AsyncClient, deadline: float, mix: dict[str, float], record: Record
) -> None:
    rng = random.Random(client_id)
    routes, weights = zip(*mix.items(), strict=True)
    number = 0
    while time.monotonic() < deadline:
        route = rng.choices(routes, weights)[0]
        started = time.perf_counter()
        try:
            if route == "search":
                await do_search(base, rng, record)
            elif route == "stream":
                await do_stream(base, rng, record)
            else:
                number += 1
                await do_ingest(base, client_id, number, record)
        except httpx.TimeoutException:
            record.outcomes.append(Outcome(ROUTES[route], "timeout", time.perf_counter() - started))
        except httpx.TransportError as exc:
            record.outcomes.append(
                Outcome(
                    ROUTES[route],
                    "transport-error",
                    time.perf_counter() - started,
                    note=f"{type(exc).__name__}: {exc}"[:200],
                )
            )
        await asyncio.sleep(rng.random() * 0.05)  # a little think time, so clients do not move in lockstep


ROUTES = {"search": "/search", "stream": "/query/stream", "ingest": "/ingest/file"}


async def list_all_documents(client: httpx.AsyncClient) -> list[dict]:
    items: list[dict] = []
    offset = 0
    while True:
        page = (await client.get("/documents", params={"offset": offset, "limit": 500})).json()
        items.extend(page["items"])
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return items


async def run_load(args: argparse.Namespace, server: Server) -> tuple[Record, list[dict], int, float]:
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    # Idle connections expire on the client (2 s) before uvicorn closes them (5 s), so a request is
    # never sent on a connection the server is closing at that moment (a client-side race).
    limits = httpx.Limits(
        max_connections=args.clients + 10, max_keepalive_connections=args.clients + 10, keepalive_expiry=2.0
    )
    timeout = httpx.Timeout(args.request_timeout, connect=10)
    record = Record()
    async with httpx.AsyncClient(base_url=server.url, headers=headers, limits=limits, timeout=timeout) as client:
        for number in range(args.seed_documents):  # something to search from the first second
            await do_ingest(client, 0, number, record)
        seeded = len(record.ingested)
        before = len(await list_all_documents(client))
        record.outcomes.clear()

        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_rss(server, stop))
        mix = {"search": args.search_weight, "stream": args.stream_weight, "ingest": args.ingest_weight}
        started = time.monotonic()
        deadline = started + args.duration
        await asyncio.gather(*(client_loop(i + 1, client, deadline, mix, record) for i in range(args.clients)))
        elapsed = time.monotonic() - started
        stop.set()
        await sampler
        documents = await list_all_documents(client)
    return record, documents, before - seeded, elapsed


# --- the report --------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def report(
    args: argparse.Namespace,
    server: Server,
    record: Record,
    documents: list[dict],
    elapsed: float,
    preexisting: int,
    integrity: list[str] | None,
) -> bool:
    outcomes = record.outcomes
    print(
        f"\n{len(outcomes)} requests in {elapsed:.1f}s ({len(outcomes) / elapsed:.1f}/s) from {args.clients} clients"
        f" against {server.url} (LLM={args.llm if server.process else 'as configured'})"
    )
    by_route: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_route[outcome.route].append(outcome)
    print(
        f"\n{'route':<15}{'requests':>9}  {'answers by status':<34}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}  (s, 200s)"
    )
    for route in ("/search", "/query/stream", "/ingest/file"):
        items = by_route.get(route, [])
        statuses = Counter(o.status for o in items)
        ok = [o.seconds for o in items if o.status == "200"]
        shown = ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items()))
        print(
            f"{route:<15}{len(items):>9}  {shown:<34}"
            + "".join(f"{percentile(ok, q):>8.2f}" for q in (50, 90, 99, 100))
        )
    streams = [
        o.first_byte for o in by_route.get("/query/stream", []) if o.status == "200" and o.first_byte is not None
    ]
    if streams:
        print(
            f"/query/stream time to first event: p50 {percentile(streams, 50):.2f}s, p90 {percentile(streams, 90):.2f}s"
        )
    if record.stream_events:
        print(
            "/query/stream last event of 200 streams: "
            + ", ".join(f"{k}: {v}" for k, v in record.stream_events.items())
        )

    checks: list[tuple[str, bool, str]] = []
    server_errors = [o for o in outcomes if o.status.startswith("5")]
    refused = [o for o in outcomes if o.status == "429"]
    broken = [o for o in outcomes if o.status in ("timeout", "transport-error")]
    checks.append(
        (
            "no 5xx",
            not server_errors,
            f"{len(server_errors)} {dict(Counter((o.route, o.status) for o in server_errors))}",
        )
    )
    print(f"\n429 (over a concurrency limit, retry later): {len(refused)} {dict(Counter(o.route for o in refused))}")
    checks.append(
        (
            "no timeouts or broken connections",
            not broken,
            f"{len(broken)} {dict(Counter((o.route, o.status, o.note) for o in broken))}",
        )
    )

    listed = Counter(item["document_id"] for item in documents)
    sources = Counter(item["source_id"] for item in documents)
    lost = [doc for doc in record.ingested if listed[doc] == 0]
    duplicated = [doc for doc, count in listed.items() if count > 1] + [s for s, c in sources.items() if c > 1]
    unexpected = len(documents) - preexisting - len(record.ingested)
    checks.append(
        ("every 200 ingest is listed (nothing lost)", not lost, f"{len(lost)} lost of {len(record.ingested)}")
    )
    checks.append(("no document listed twice", not duplicated, f"{len(duplicated)} duplicated"))
    checks.append(
        (
            "no documents beyond the 200 answers",
            unexpected <= len(record.abandoned_ingests),
            f"{unexpected} extra, {len(record.abandoned_ingests)} ingests whose answer never came",
        )
    )
    if server.rss_samples:
        baseline, peak = server.rss_samples[0] / 2**20, max(server.rss_samples) / 2**20
        print(
            f"\nserver RSS: {baseline:.0f} MiB at start of the run, peak {peak:.0f} MiB, "
            f"end {server.rss_samples[-1] / 2**20:.0f} MiB ({len(server.rss_samples)} samples)"
        )
        checks.append((f"peak RSS under {args.max_rss_mb} MiB", peak < args.max_rss_mb, f"{peak:.0f} MiB"))
    if integrity is not None:
        checks.append(("SQLite store consistent after shutdown", not integrity, "; ".join(integrity[:5]) or "ok"))
    print(
        f"documents: {len(documents)} listed afterwards; {len(record.ingested)} ingests answered 200 "
        f"({args.seed_documents} of them seeding before the run); {preexisting} were there before"
    )

    print()
    for name, passed, detail in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}")
    if args.json:
        summary = {
            "requests": len(outcomes),
            "seconds": elapsed,
            "clients": args.clients,
            "llm": args.llm,
            "by_route": {
                route: {
                    "statuses": Counter(o.status for o in items),
                    "p50": percentile([o.seconds for o in items if o.status == "200"], 50),
                    "p99": percentile([o.seconds for o in items if o.status == "200"], 99),
                }
                for route, items in by_route.items()
            },
            "peak_rss_mib": max(server.rss_samples) / 2**20 if server.rss_samples else None,
            "checks": {name: passed for name, passed, _ in checks},
        }
        Path(args.json).write_text(json.dumps(summary, indent=2, default=dict))
    return all(passed for _, passed, _ in checks)


def store_integrity(database: Path) -> list[str]:
    from carrag.services.stores.sqlite import integrity_problems

    if not database.exists():
        return [f"{database} does not exist"]
    connection = sqlite3.connect(database)
    try:
        return integrity_problems(connection)
    finally:
        connection.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an already running Carrag (default: start one on loopback)")
    parser.add_argument("--api-key", help="bearer key, if the server has API_KEYS")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load (default 20)")
    parser.add_argument("--llm", choices=["none", "local"], default="none", help="LLM of the started server")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra setting for the started server, e.g. --set MAX_CONCURRENT_QUERIES=4",
    )
    parser.add_argument("--search-weight", type=float, default=0.6)
    parser.add_argument("--stream-weight", type=float, default=0.2)
    parser.add_argument("--ingest-weight", type=float, default=0.2)
    parser.add_argument("--seed-documents", type=int, default=5)
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=180.0,
        help="client-side seconds per request; longer counts as a failure",
    )
    parser.add_argument("--max-rss-mb", type=float, default=3072.0)
    parser.add_argument("--json", help="also write a summary as JSON to this file")
    args = parser.parse_args(argv)
    if args.url and not args.url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        print("note: --url is not a loopback address; make sure you mean to load that server", file=sys.stderr)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.url:
        server = Server(args.url.rstrip("/"))
        record, documents, preexisting, elapsed = asyncio.run(run_load(args, server))
        return 0 if report(args, server, record, documents, elapsed, preexisting, None) else 1
    with started_server(args) as server:
        print(f"server up at {server.url} (data in {server.data_dir}); {args.clients} clients for {args.duration:.0f}s")
        record, documents, preexisting, elapsed = asyncio.run(run_load(args, server))
    return 0 if report(args, server, record, documents, elapsed, preexisting, server.integrity) else 1


if __name__ == "__main__":
    sys.exit(main())

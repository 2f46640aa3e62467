"""Stream-drop load test: clients that leave generated answers half-way must never take the server down.

    .venv/bin/python scripts/stream_drop.py                 # 50 rounds of 3 streams, local LLM, own server
    .venv/bin/python scripts/stream_drop.py --rounds 10 --streams 5

It starts a server on loopback with the local LLM (a fresh data directory, no setting from the
environment), ingests a few maintenance notes, then runs rounds of concurrent ``POST /query/stream``
requests with ``answer_mode: generate`` (and ``min_relevance: 0``, so the model always runs). Each
client closes its connection at a random point: before the first event (the search or the prompt
being processed), after some events, or not at all. After every round the server process must still
be running; after the last, ``GET /health`` must answer 200 and a normal ``POST /query`` an answer.

It prints how the streams ended and each check; the exit status is 0 only when every check passes.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scripts.load import QUESTIONS, document_text  # noqa: E402 - after the path is set


async def dropped_stream(client: httpx.AsyncClient, rng: random.Random, max_seconds: float) -> str:
    """One stream, closed after a random time or a random number of events; how it ended."""
    body = {"question": rng.choice(QUESTIONS), "answer_mode": "generate", "min_relevance": 0}
    leave_after_events = rng.choice([0, 1, 2, 5, 20, 10_000])
    events = 0
    try:
        async with asyncio.timeout(rng.uniform(0, max_seconds)):
            async with client.stream("POST", "/query/stream", json=body) as response:
                if response.status_code != 200:
                    return f"status {response.status_code}"
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        events += 1
                        if line.split(":", 1)[1].strip() in ("done", "error"):
                            return f"finished ({line.split(':', 1)[1].strip()})"
                        if events >= leave_after_events:
                            return "left after events"
        return "closed by the server"
    except TimeoutError:
        return "left before the first event" if events == 0 else "left while streaming"


async def run(args: argparse.Namespace, url: str, alive: Callable[[], bool]) -> list[tuple[str, bool, str]]:
    rng = random.Random(args.seed)
    endings: Counter[str] = Counter()
    checks: list[tuple[str, bool, str]] = []
    timeout = httpx.Timeout(args.request_timeout, connect=10)
    async with httpx.AsyncClient(base_url=url, timeout=timeout) as client:
        for number in range(3):
            name = f"notes-{number}.txt"
            response = await client.post("/ingest/file", files={"file": (name, document_text(0, number))})
            response.raise_for_status()
        started = time.monotonic()
        survived = 0
        for round_number in range(1, args.rounds + 1):
            outcomes = await asyncio.gather(
                *(dropped_stream(client, rng, args.max_seconds) for _ in range(args.streams)),
                return_exceptions=True,
            )
            endings.update(o if isinstance(o, str) else f"client error {type(o).__name__}" for o in outcomes)
            if not alive():
                print(f"round {round_number}: the server process has exited")
                break
            survived = round_number
            if round_number % 10 == 0:
                print(f"round {round_number}: server up, {time.monotonic() - started:.0f}s so far", flush=True)
        print("\nhow the streams ended: " + ", ".join(f"{k}: {v}" for k, v in sorted(endings.items())))
        checks.append((f"the server survived {args.rounds} rounds", survived == args.rounds, f"{survived} rounds"))
        server_errors = {ending: count for ending, count in endings.items() if ending.startswith("status 5")}
        checks.append(("no 5xx answers", not server_errors, str(server_errors)))
        try:
            health = await client.get("/health")
            checks.append(("GET /health answers 200", health.status_code == 200, str(health.status_code)))
            answer = await client.post("/query", json={"question": QUESTIONS[0], "answer_mode": "generate"})
            text = answer.json().get("answer", "") if answer.status_code == 200 else answer.text[:200]
            checks.append(("a normal POST /query answers", answer.status_code == 200 and bool(text), text[:80]))
        except httpx.HTTPError as exc:
            checks.append(("the server answers afterwards", False, f"{type(exc).__name__}: {exc}"))
        checks.append(("the server process runs at the end", alive(), ""))
    return checks


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--streams", type=int, default=3, help="concurrent streams per round (default 3)")
    parser.add_argument(
        "--max-seconds", type=float, default=4.0, help="a stream is left after at most this long (default 4)"
    )
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--request-timeout", type=float, default=300.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from carrag.bench.server import server_process

    args = parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="carrag-stream-drop-") as tmp,
        server_process(Path(tmp), startup_timeout=180, LLM="local") as server,
    ):
        print(f"server up at {server.url}; {args.rounds} rounds of {args.streams} dropped streams")
        checks = asyncio.run(run(args, server.url, lambda: server.process.poll() is None))
        if server.process.poll() is not None:
            print(f"server exited with {server.process.returncode}; its log:\n{server.log()[-4000:]}")
    print()
    for name, passed, detail in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {name}: {detail}")
    return 0 if checks and all(passed for _, passed, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())

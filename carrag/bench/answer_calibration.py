"""Calibrate the answer thresholds (ANSWER_MIN_RELEVANCE) and compare answer modes, in process.

    python -m carrag.bench.answer_calibration --questions FILE [--corpus DIR] [--modes extract,auto]
        [--scifact DIR --scifact-queries 60]

For every question of a question file (the ``carrag eval-answers`` format: ``documents``,
``question``, optional ``history``, ``answerable``, ``accepted``), the listed documents are
ingested into one store and the question is answered with ``min_relevance=0`` so that the
relevance of every question is seen. Printed: the relevance of answerable and unanswerable
questions, the threshold that separates them best (balanced accuracy), and per mode a rough
answer check (an accepted string in the answer) with the median latency. ``--scifact`` adds
SciFact claims (answerable: their cited abstract is ingested) and off-topic questions
(unanswerable) over the same abstracts, a second, independent set for the threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from carrag.services.container import build_container
from carrag.services.models import ChatMessage
from carrag.services.requests import AnswerQuery, IngestCommand, SearchQuery
from carrag.services.settings import Settings

OFF_TOPIC = [
    "What is the capital of Mongolia?",
    "Who won the 1998 football World Cup?",
    "How do I bake sourdough bread?",
    "What is the boiling point of ethanol?",
    "Which planet has the most moons?",
    "How tall is the Eiffel Tower?",
    "What year did the Berlin Wall fall?",
    "Who wrote the novel Moby-Dick?",
    "How do I change a bicycle tyre?",
    "What is the exchange rate of the euro to the yen?",
    "What is the best programming language for games?",
    "How many strings does a violin have?",
    "What is the recipe for guacamole?",
    "Who painted the Mona Lisa?",
    "What is the speed of sound in water?",
    "Which oil filter fits a 2019 Ford F-150?",
    "What time does the train to Paris leave?",
    "How do I reset my router password?",
    "What is the population of Canada?",
    "When was the first iPhone released?",
]


def accepted_in(answer: str, accepted: list[Any]) -> bool:
    text = answer.lower()
    for option in accepted:
        parts = option if isinstance(option, list) else [option]
        if all(str(part).lower() in text for part in parts):
            return True
    return False


def best_threshold(positives: list[float], negatives: list[float]) -> tuple[float, float]:
    best = (0.0, 0.0)
    for candidate in sorted(set(positives + negatives)):
        tpr = sum(p >= candidate for p in positives) / max(len(positives), 1)
        tnr = sum(n < candidate for n in negatives) / max(len(negatives), 1)
        balanced = (tpr + tnr) / 2
        if balanced > best[1]:
            best = (candidate, balanced)
    return best


def describe(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: none"
    ordered = sorted(values)
    quartile = ordered[len(ordered) // 4]
    return (
        f"{name}: n={len(values)} min={ordered[0]:.3f} q1={quartile:.3f} "
        f"median={statistics.median(ordered):.3f} max={ordered[-1]:.3f}"
    )


async def run_questions(
    questions: list[dict[str, Any]], corpus: Path, modes: list[str], data_dir: Path
) -> dict[str, Any]:
    settings = Settings(_env_file=None, data_dir=data_dir, tagger="off", log_level="WARNING")
    container = await build_container(settings)
    try:
        for document in sorted({d for q in questions for d in q["documents"]}):
            path = corpus / document
            await container.ingestion.ingest_file(path.read_bytes(), path.name, IngestCommand())
        relevances: dict[bool, list[float]] = {True: [], False: []}
        per_mode: dict[str, dict[str, Any]] = {}
        for mode in modes:
            correct, refused, latencies, rows = 0, 0, [], []
            for question in questions:
                history = [ChatMessage(m["role"], m["content"]) for m in question.get("history", [])]
                started = time.perf_counter()
                answer = await container.answers.answer(
                    AnswerQuery(SearchQuery(question["question"], 5), history=history, answer_mode=mode)  # type: ignore[arg-type]
                )
                latencies.append(time.perf_counter() - started)
                if mode == modes[0]:
                    relevances[bool(question["answerable"])].append(answer.relevance or 0.0)
                below = not answer.answerable
                if question["answerable"]:
                    correct += (not below) and accepted_in(answer.answer, question.get("accepted", []))
                else:
                    refused += below
                rows.append(
                    {
                        "id": question.get("id"),
                        "relevance": answer.relevance,
                        "mode": answer.answer_mode,
                        "refused": not answer.answerable,
                        "ok": accepted_in(answer.answer, question.get("accepted", []))
                        if question["answerable"]
                        else None,
                        "answer": answer.answer[:160],
                    }
                )
            answerable = sum(bool(q["answerable"]) for q in questions)
            per_mode[mode] = {
                "answerable_accuracy": round(correct / max(answerable, 1), 3),
                "refusal_rate": round(refused / max(len(questions) - answerable, 1), 3),
                "median_latency_s": round(statistics.median(latencies), 3),
                "rows": rows,
            }
        return {"relevances": relevances, "modes": per_mode, "threshold": settings.answer_min_relevance}
    finally:
        await container.aclose()


async def run_scifact(directory: Path, query_count: int, data_dir: Path) -> dict[bool, list[float]]:
    settings = Settings(_env_file=None, data_dir=data_dir, tagger="off", log_level="WARNING")
    container = await build_container(settings)
    try:
        qrels = [line.split("\t") for line in (directory / "qrels" / "train.tsv").read_text().splitlines()[1:]]
        queries = {row["_id"]: row["text"] for row in map(json.loads, (directory / "queries.jsonl").open())}
        corpus = {row["_id"]: row for row in map(json.loads, (directory / "corpus.jsonl").open())}
        rng = random.Random(11)
        chosen = rng.sample([q for q in qrels if q[0] in queries and q[1] in corpus], query_count)
        wanted = {doc for _, doc, _ in chosen} | set(rng.sample(sorted(corpus), 200))
        for doc_id in sorted(wanted):
            row = corpus[doc_id]
            data = f"{row.get('title', '')}\n\n{row['text']}".encode()
            await container.ingestion.ingest_file(data, f"{doc_id}.txt", IngestCommand())
        found: dict[bool, list[float]] = {True: [], False: []}
        for label, texts in ((True, [queries[q] for q, _, _ in chosen]), (False, OFF_TOPIC)):
            for text in texts:
                answer = await container.answers.answer(
                    AnswerQuery(SearchQuery(text, 5), answer_mode="extract", min_relevance=0.0)
                )
                found[label].append(answer.relevance or 0.0)
        return found
    finally:
        await container.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    parser.add_argument("--modes", default="extract")
    parser.add_argument("--scifact", type=Path)
    parser.add_argument("--scifact-queries", type=int, default=60)
    parser.add_argument("--every", type=int, default=1, help="Use every n-th question (a quicker sample).")
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = questions[:: args.every]
    with tempfile.TemporaryDirectory() as tmp:
        result = await run_questions(questions, args.corpus, args.modes.split(","), Path(tmp) / "q")
        print(describe("answerable  ", result["relevances"][True]))
        print(describe("unanswerable", result["relevances"][False]))
        threshold, balanced = best_threshold(result["relevances"][True], result["relevances"][False])
        print(f"best threshold {threshold:.3f} (balanced accuracy {balanced:.3f})")
        for mode, summary in result["modes"].items():
            rows = summary.pop("rows")
            print(mode, json.dumps(summary), "at ANSWER_MIN_RELEVANCE", result["threshold"])
            for row in rows:
                print("  ", mode, json.dumps(row))
        if args.scifact:
            found = await run_scifact(args.scifact, args.scifact_queries, Path(tmp) / "s")
            print(describe("scifact claims", found[True]))
            print(describe("off-topic     ", found[False]))
            threshold, balanced = best_threshold(found[True], found[False])
            print(f"scifact best threshold {threshold:.3f} (balanced accuracy {balanced:.3f})")


if __name__ == "__main__":
    asyncio.run(main())

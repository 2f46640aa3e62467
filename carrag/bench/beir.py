"""Load a dataset in the BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), keeping
only queries judged in the split.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from carrag.services.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class CorpusRecord:
    doc_id: str
    title: str
    text: str


@dataclass(slots=True)
class BeirDataset:
    name: str
    split: str
    corpus: list[CorpusRecord]
    queries: dict[str, str]  # query id -> text, judged queries only, in file order
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}

    def limit_queries(self, count: int | None) -> BeirDataset:
        if count is None or count >= len(self.queries):
            return self
        kept = dict(list(self.queries.items())[:count])
        return BeirDataset(self.name, self.split, self.corpus, kept, {q: self.qrels[q] for q in kept})


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{number} is not valid JSON ({exc.msg}).") from exc
            if not isinstance(record, dict) or "_id" not in record:
                raise InvalidInput(f'{path}:{number} has no "_id" field.')
            yield number, record


def _required(directory: Path, relative: str) -> Path:
    path = directory / relative
    if not path.is_file():
        raise InvalidInput(f"{directory} is not a BEIR dataset: {relative} is missing.")
    return path


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or (number == 1 and not row[-1].strip().lstrip("-").isdigit()):
                continue  # blank line or the header
            if len(row) < 3:
                raise InvalidInput(f"{path}:{number} needs query-id, corpus-id and score separated by tabs.")
            try:
                relevance = int(row[-1])
            except ValueError as exc:
                raise InvalidInput(f"{path}:{number}: score {row[-1]!r} is not an integer.") from exc
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = relevance
    return qrels


def load_beir(directory: Path | str, split: str = "train") -> BeirDataset:
    directory = Path(directory)
    if not directory.is_dir():
        raise InvalidInput(f"{directory} is not a directory.")
    corpus_path = _required(directory, "corpus.jsonl")
    queries_path = _required(directory, "queries.jsonl")
    qrels_path = directory / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (directory / "qrels").glob("*.tsv"))
        raise InvalidInput(
            f"{directory} has no qrels for split {split!r}"
            + (f"; available: {', '.join(available)}." if available else " (no qrels/ directory).")
        )

    corpus = [
        CorpusRecord(str(r["_id"]), str(r.get("title") or ""), str(r.get("text") or "")) for _, r in _jsonl(corpus_path)
    ]
    if not corpus:
        raise InvalidInput(f"{corpus_path} holds no documents.")
    qrels = load_qrels(qrels_path)
    queries = {str(r["_id"]): str(r.get("text") or "") for _, r in _jsonl(queries_path)}
    judged = {qid: text for qid, text in queries.items() if qid in qrels and text.strip()}
    if not judged:
        raise InvalidInput(f"No query in {queries_path} has judgements in {qrels_path}.")
    return BeirDataset(directory.name, split, corpus, judged, {qid: qrels[qid] for qid in judged})

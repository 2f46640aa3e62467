"""What the BM25 leg pays for the rows tantivy has not caught up with (docs/benchmarks.md,
"Embedded vector index under ingest"): the changed rows' index (`changed_rows.py`) holding the
store's last N chunks, searched for SciFact questions beside the store's tantivy index.

Usage: python scripts/changed_rows_cost.py STORE.db QUERIES.jsonl
(STORE.db: a Carrag SQLite store whose indexes were built, e.g. a copy of `carrag bench`'s; read only)
"""

import json
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import tantivy

from carrag.services.stores.changed_rows import ChangedRows
from carrag.services.stores.fts_query import query_terms
from carrag.services.stores.lexical_index import ANALYZER, LexicalView, _analyzer, _schema, indexed_text

STORE, QUERIES = Path(sys.argv[1]), Path(sys.argv[2])

index = tantivy.Index(_schema(), path=str(STORE.parent / f"{STORE.name}.indexes" / "lexical"), reuse=True)
index.register_tokenizer(ANALYZER, _analyzer())
view = LexicalView(index.searcher(), _schema(), _analyzer())
connection = sqlite3.connect(f"file:{STORE}?mode=ro", uri=True)
questions = [query_terms(json.loads(line)["text"]) for line in QUERIES.open()][:60]
view.search(questions[0], 15)  # tantivy's average length, as a search learns it
print(f"{view.searcher.num_docs} chunks in tantivy, {len(questions)} questions, k 15")
for count in (100, 1_000, 5_000):
    rows = connection.execute("SELECT id, heading, text FROM chunks ORDER BY id DESC LIMIT ?", (count,)).fetchall()
    changed = ChangedRows(lambda text: list(_analyzer().analyze(text)))
    changed.reset(0)
    started = time.perf_counter()
    changed.apply(1, ((rowid, 1, indexed_text(heading, text)) for rowid, heading, text in rows))
    built = time.perf_counter() - started
    times, read = [], changed.postings_read
    for words in questions:
        started = time.perf_counter()
        changed.terms(words).search(15, view)
        times.append((time.perf_counter() - started) * 1000)
    print(
        f"{count} changed rows: indexed in {built * 1000:.0f} ms; a search p50 {statistics.median(times):.2f} ms,"
        f" max {max(times):.2f} ms; {(changed.postings_read - read) / len(questions):.0f} postings read a question"
    )
print(f"load {os.getloadavg()}")

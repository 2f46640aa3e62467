"""FTS5 over the rows changed since tantivy's position, the BM25 leg's part while documents arrive
(issue 29; docs/benchmarks.md, "Embedded vector index under ingest").

Usage: python scripts/fts_changed_rows.py COPY.db [QUERIES.jsonl]
COPY.db: a copy of a grown store (`scripts/store_legs.py`): its change log is rewritten. For each
backlog (the last N chunks changed, plus 2,000 deleted rowids, as a re-ingest leaves), the p50 of
`fts5_search(changed_after=...)` as shipped, and of the plain ``rowid IN (...)`` filter it replaced
(3 queries, at the smallest backlog only: each takes seconds).
"""

import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import psutil

from carrag.services.models import SearchFilters
from carrag.services.stores.fts_query import fts_match_expression
from carrag.services.stores.sqlite_search import CHANGED_AFTER, fts5_search

connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.row_factory = sqlite3.Row
queries_file = Path(sys.argv[2] if len(sys.argv) > 2 else "../shared/data/scifact-dev/queries.jsonl")
questions = [json.loads(line)["text"] for line in queries_file.read_text().splitlines()][:60]
newest = connection.execute("SELECT max(id) FROM chunks").fetchone()[0]
total = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
OLD = (
    "SELECT rowid, bm25(chunks_fts, 1.0, 1.0) AS rank FROM chunks_fts"
    f" WHERE chunks_fts MATCH ? AND rowid IN ({CHANGED_AFTER}) ORDER BY rank LIMIT 15"
)
print(f"{total} chunks; load {psutil.getloadavg()}")
for backlog in (100, 1_000, 5_000):
    connection.execute("DELETE FROM chunk_changes")
    connection.execute("INSERT INTO chunk_changes(chunk_rowid) SELECT id + 10000000 FROM chunks WHERE id <= 2000")
    connection.execute("INSERT INTO chunk_changes(chunk_rowid) SELECT id FROM chunks WHERE id > ?", (newest - backlog,))
    position = connection.execute("SELECT min(seq) - 1 FROM chunk_changes").fetchone()[0]
    shipped, old = [], []
    for n, question in enumerate(questions):
        started = time.perf_counter()
        fts5_search(question, 15, SearchFilters(), changed_after=position)(connection)
        shipped.append(time.perf_counter() - started)
        if backlog == 100 and n < 3:
            started = time.perf_counter()
            connection.execute(OLD, (fts_match_expression(question), position)).fetchall()
            old.append(time.perf_counter() - started)
    line = f"{backlog} changed rows (+2,000 deleted): p50 {statistics.median(shipped) * 1000:.1f} ms"
    if old:
        line += f"; rowid IN (...) alone: {statistics.median(old) * 1000:.0f} ms"
    print(line, f"load {psutil.getloadavg()[0]:.1f}", flush=True)

"""The BM25 leg while tantivy is behind, against the same leg caught up, on a built store
(docs/benchmarks.md, "Embedded vector index under ingest").

Usage: python scripts/changed_rows_quality.py STORE.db SCIFACT_DIR [SHARE]

Tantivy is built over the store's chunks but the last SHARE of them (0.1 by default), which the
changed rows' index holds instead (`changed_rows.py`), as during ingestion; then, as after a
re-ingest, tantivy holds every chunk's old text and the changed rows' index a revised text of
SHARE of them (another seeded sample; " (revised)" appended) and none of a further 2 %, deleted.
Each time nDCG@10 of the judged queries (k 30) and how many top-10 lists equal the caught-up
index's, with the postings the searches read there.
"""

import random
import sqlite3
import sys
import tempfile
from pathlib import Path

from carrag.bench.beir import load_beir
from carrag.bench.runner import score_run
from carrag.services.stores.changed_rows import ChangedRows
from carrag.services.stores.fts_query import query_terms
from carrag.services.stores.lexical_index import LexicalIndex, LexicalView, indexed_text

STORE, SCIFACT = Path(sys.argv[1]), Path(sys.argv[2])
SHARE = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
K = 30


def tantivy(directory: Path, rows: list[tuple[int, str]]) -> tuple[LexicalIndex, LexicalView]:
    index = LexicalIndex(directory)
    index.open(reset=True)
    index.replace((), rows)
    return index, index.commit()


def main() -> None:
    connection = sqlite3.connect(STORE)
    chunks = connection.execute(
        "SELECT c.id, c.heading, c.text, d.external_id FROM chunks c JOIN documents d USING (document_id) ORDER BY c.id"
    ).fetchall()
    texts = {rowid: indexed_text(heading, text) for rowid, heading, text, _ in chunks}
    document = {rowid: external for rowid, _, _, external in chunks}
    dataset = load_beir(SCIFACT, "train")
    stored = set(document.values())
    queries = {q: text for q, text in dataset.queries.items() if stored & set(dataset.qrels[q])}
    qrels = {q: dataset.qrels[q] for q in queries}
    cut = int(len(chunks) * (1 - SHARE))
    sample = random.Random(29).sample(list(texts), len(texts))
    revised = {rowid: texts[rowid] + " (revised)" for rowid in sample[: int(len(sample) * SHARE)]}
    deleted = set(sample[len(revised) : len(revised) + len(sample) // 50])

    def run(search) -> tuple[dict[str, list[str]], float]:
        lists = {}
        for qid, question in queries.items():
            hits = search(query_terms(question))
            lists[qid] = list(dict.fromkeys(document[rowid] for rowid, _ in hits if rowid in document))
        mean, _ = score_run(qrels, lists)
        return lists, mean["nDCG@10"]

    with tempfile.TemporaryDirectory() as work:
        scenarios = {
            "the last rows written after tantivy's position": (
                [(rowid, texts[rowid]) for rowid, *_ in chunks[:cut]],
                [(rowid, rowid, texts[rowid]) for rowid, *_ in chunks[cut:]],
                dict(texts),
            ),
            "rows re-written in place and deleted": (
                list(texts.items()),
                [(rowid, rowid, text) for rowid, text in revised.items()] + [(rowid, rowid, None) for rowid in deleted],
                {r: revised.get(r, t) for r, t in texts.items() if r not in deleted},
            ),
        }
        for number, (label, (behind_rows, changes, final)) in enumerate(scenarios.items()):
            index, behind = tantivy(Path(work) / f"behind{number}", behind_rows)
            changed = ChangedRows(index.analyze)
            changed.reset(0)
            changed.apply(max(rowid for rowid, *_ in changes), changes)
            _, caught_up = tantivy(Path(work) / f"caught-up{number}", list(final.items()))

            def apart(words: list[str], behind: LexicalView = behind, changed: ChangedRows = changed):
                terms = changed.terms(words)
                hits = behind.search(words, K, skip=terms.rowids)
                return sorted(hits + terms.search(K, behind), key=lambda hit: -hit[1])[:K]

            before = changed.postings_read
            lists_apart, ndcg_apart = run(apart)
            read = (changed.postings_read - before) / len(queries)
            lists_caught_up, ndcg_caught_up = run(lambda words, view=caught_up: view.search(words, K))
            same = sum(lists_apart[q][:10] == lists_caught_up[q][:10] for q in queries)
            print(
                f"{label}: {len(changes)} changed rows, {len(final)} chunks, {len(queries)} queries: nDCG@10 "
                f"{ndcg_apart:.4f} apart against {ndcg_caught_up:.4f} caught up; {same} identical top-10 lists; "
                f"{read:.0f} postings read a query in the changed rows"
            )


main()

"""The SQLite store's search legs, each built as a function of a read connection: BM25 on tantivy (and
the rows it has not caught up with) or, with filters, FTS5; kNN on the HNSW graph and its exact delta
re-scored with SQLite's float32 vectors or, with filters, exact cosine over the filtered rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from carrag.services.models import ScoredChunk, SearchFilters, StoredChunk
from carrag.services.stores.changed_rows import ChangedTerms
from carrag.services.stores.fts_query import fts_match_expression, query_terms
from carrag.services.stores.lexical_index import LexicalView
from carrag.services.stores.search_indexes import SearchIndexes
from carrag.services.stores.sqlite_rows import CHUNK_COLUMNS, filter_sql, row_to_chunk, rows_by_id
from carrag.services.stores.vector_segments import matrix_times_vector

Search = Callable[[sqlite3.Connection], list[ScoredChunk]]

# BM25 column weights: chunk text, then its heading (document title / section path). Equal weights
# score the heading as if it were part of the chunk, like BM25 over "title + text".
BM25_WEIGHTS = (1.0, 1.0)


def lexical_leg(indexes: SearchIndexes, query: str, k: int, filters: SearchFilters) -> Search:
    """BM25 for ``query``: tantivy when nothing filters, FTS5 otherwise.

    Tantivy answers as last published (`SearchIndexes.lexical_view`); the rows changed after its
    position (missing from it, or stale there) are left out of its hits and scored apart, on its
    scale, by the in-memory index of those rows (`changed_rows.py`), so a search never waits for
    a tantivy commit. FTS5 answers while those rows are too many to hold."""
    if filter_sql(filters)[0]:
        return fts5_search(query, k, filters)
    terms = query_terms(query)

    def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
        def in_rows(found: tuple[LexicalView | None, ChangedTerms] | None) -> list[ScoredChunk]:
            if found is None:
                return fts5_search(query, k, filters)(connection)
            view, changed = found
            hits = view.search(terms, k, skip=changed.rowids) if view is not None else []
            # the changed rows are scored after the view's search, which gives `view` its average
            best = sorted(hits + changed.search(k, view), key=lambda hit: -hit[1])[:k]
            rows = rows_by_id(connection, [rowid for rowid, _ in best])
            return [ScoredChunk(row_to_chunk(rows[rowid]), score) for rowid, score in best if rowid in rows]

        return indexes.search(connection, lambda: indexes.lexical_view(terms), in_rows)

    return search


def fts5_search(query: str, k: int, filters: SearchFilters) -> Search:
    """BM25 on SQLite's FTS5 index, for searches with filters (bounded by the filter)."""
    expression = fts_match_expression(query)
    where, params = filter_sql(filters)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    # Rank inside the FTS index first and join only the best k rows: joining every match to
    # its chunk and document row before sorting cost 3-5x more at 100k chunks.
    allowed = (
        f" AND rowid IN (SELECT c.id FROM chunks c JOIN documents d ON d.document_id = c.document_id WHERE {where})"
        if where
        else ""
    )
    sql = (
        f"WITH best AS (SELECT rowid, bm25(chunks_fts, {weights}) AS rank FROM chunks_fts"
        f" WHERE chunks_fts MATCH ?{allowed} ORDER BY rank LIMIT ?)"
        f" SELECT {CHUNK_COLUMNS}, best.rank AS rank FROM best JOIN chunks c ON c.id = best.rowid"
        " JOIN documents d ON d.document_id = c.document_id ORDER BY best.rank"
    )

    def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
        rows = connection.execute(sql, [expression, *params, k]).fetchall()
        # FTS5's bm25() is negated so that smaller is better; flip it back to a positive score.
        return [ScoredChunk(row_to_chunk(r), -float(r["rank"])) for r in rows]

    return search


def vector_leg(indexes: SearchIndexes, vector: np.ndarray, k: int, filters: SearchFilters) -> Search:
    """kNN for ``vector``: HNSW candidates re-scored exactly, or exact cosine over the filtered rows."""
    where, params = filter_sql(filters)
    query = np.asarray(vector, dtype=np.float32).reshape(-1)

    def search(connection: sqlite3.Connection) -> list[ScoredChunk]:
        if where:
            scored = exact_top_k(
                connection.execute(
                    f"SELECT c.id, c.embedding FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                    f" WHERE {where}",
                    params,
                ),
                query,
                k,
            )
            rows = rows_by_id(connection, [rowid for rowid, _ in scored])
            return [ScoredChunk(row_to_chunk(rows[r]), score) for r, score in scored if r in rows]

        def in_rows(candidates: list[int]) -> list[ScoredChunk]:
            rows = rows_by_id(connection, candidates, vectors=True)
            # the candidates' exact cosine, from the float32 vectors SQLite holds
            scored = exact_top_k(((r["id"], r["embedding"]) for r in rows.values()), query, k)
            return [ScoredChunk(row_to_chunk(rows[r]), score) for r, score in scored]

        return indexes.search(connection, lambda: indexes.vectors.candidates(query, k), in_rows)

    return search


def windows_read(centres: Sequence[tuple[str, int]], radius: int) -> Callable[[sqlite3.Connection], list[StoredChunk]]:
    """The chunks within ``radius`` of each (document id, chunk index) centre, in document order."""
    conditions = " OR ".join("(c.document_id = ? AND c.chunk_index BETWEEN ? AND ?)" for _ in centres)
    params: list[Any] = []
    for document_id, index in centres:
        params.extend((document_id, index - radius, index + radius))

    def windows(connection: sqlite3.Connection) -> list[StoredChunk]:
        rows = connection.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks c JOIN documents d ON d.document_id = c.document_id"
            f" WHERE {conditions} ORDER BY c.document_id, c.chunk_index",
            params,
        ).fetchall()
        return [row_to_chunk(r) for r in rows]

    return windows


def exact_top_k(rows: Any, query: np.ndarray, k: int, batch: int = 20_000) -> list[tuple[int, float]]:
    """The ``k`` best (rowid, cosine) of (rowid, float32 BLOB) rows, read in bounded batches."""
    norm = float(np.linalg.norm(query)) or 1.0
    best_ids = np.empty(0, dtype=np.int64)
    best_scores = np.empty(0, dtype=np.float32)
    iterator = iter(rows)
    while True:
        part = [row for _, row in zip(range(batch), iterator, strict=False)]
        if not part:
            break
        ids = np.fromiter((r[0] for r in part), dtype=np.int64, count=len(part))
        matrix = np.frombuffer(b"".join(r[1] for r in part), dtype=np.float32).reshape(len(part), -1)
        if matrix.shape[1] != query.shape[0]:
            return []
        norms = np.linalg.norm(matrix, axis=1)
        scores = matrix_times_vector(matrix, query) / (np.where(norms == 0, 1, norms) * norm)
        best_ids = np.concatenate([best_ids, ids])
        best_scores = np.concatenate([best_scores, scores.astype(np.float32)])
        if best_ids.size > k:
            keep = np.argpartition(-best_scores, k - 1)[:k]
            best_ids, best_scores = best_ids[keep], best_scores[keep]
    order = np.lexsort((best_ids, -best_scores))
    return [(int(best_ids[i]), float(best_scores[i])) for i in order]

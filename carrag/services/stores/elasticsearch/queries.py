"""Query building: search filters as Elasticsearch clauses, SQLite GLOB patterns as Lucene regexps,
and the two search legs' request bodies."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from carrag.services.models import SearchFilters
from carrag.services.stores.elasticsearch.mapping import collection_clause
from carrag.services.stores.fts_query import query_terms

MAX_RESULT_WINDOW = 10_000  # Elasticsearch's index.max_result_window default
MAX_NUM_CANDIDATES = 10_000  # Elasticsearch's limit for kNN num_candidates
# BM25 field weights: chunk text, then its heading (document title / section path), as in SQLite.
BM25_FIELDS = ["content", "heading^1.0"]
# A glob's tokens: a class (``^`` negates; a ``]`` first is a member, so ``[]`` alone is unclosed), or one
# character; a class's members: a range ``a-z``, or one character (a ``-`` first or last is itself).
GLOB_TOKEN = re.compile(r"\[(\^?+)(\]?+[^\]]*)\]|.", re.DOTALL)
CLASS_MEMBER = re.compile(r"(.)-(.)|.", re.DOTALL)


def glob_to_regexp(glob: str) -> str | None:
    """A SQLite GLOB pattern as a Lucene regular expression (whole-term, case-sensitive): ``*``, ``?``,
    ``[...]`` (``^`` negates, ``a-z`` ranges, a ``]`` first is literal), everything else escaped. None
    for an unclosed ``[``, which SQLite treats as matching nothing."""
    out: list[str] = []
    for token in GLOB_TOKEN.finditer(glob):
        if token[2] is not None:
            out.append("[" + ("^" if token[1] else "") + CLASS_MEMBER.sub(_member, token[2]) + "]")
        elif token[0] == "[":
            return None
        else:
            out.append({"*": ".*", "?": "."}.get(token[0]) or _literal(token[0]))
    return "".join(out)


def _literal(char: str) -> str:
    # Lucene reads a backslash before a letter or digit as a class such as \d, so only escape the rest.
    return char if char.isalnum() else "\\" + char


def _member(member: re.Match[str]) -> str:
    return f"{_literal(member[1])}-{_literal(member[2])}" if member[2] is not None else _literal(member[0])


def regexp_clause(field: str, pattern: str | None) -> dict[str, Any]:
    """``field`` matches the regular expression ``pattern`` whole; None (an unclosed class) matches nothing."""
    if pattern is None:
        return {"bool": {"must_not": {"match_all": {}}}}
    return {"regexp": {field: {"value": pattern, "flags": "NONE"}}}


def filename_clause(filename: str, is_glob: bool) -> dict[str, Any]:
    """Documents whose lower-case file name (``filename_lower``) matches a glob whole, or contains
    ``filename`` (lower case already)."""
    contains = ".*" + "".join(_literal(char) for char in filename) + ".*"
    return regexp_clause("filename_lower", glob_to_regexp(filename) if is_glob else contains)


def filter_clauses(filters: SearchFilters, *, exclude: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """``exclude``: versions to leave out (found not live by an earlier attempt, `reads.live_hits`)."""
    clauses: list[dict[str, Any]] = [{"term": {"doc_kind": "chunk"}}]
    if exclude:
        clauses.append({"bool": {"must_not": {"terms": {"document_id": sorted(exclude)}}}})
    if filters.tags:
        clauses.append({"terms": {"tags.keyword": list(filters.tags)}})
    if filters.source is not None and filters.source_is_glob:
        clauses.append(regexp_clause("source_id", glob_to_regexp(filters.source)))
    elif filters.source is not None:
        clauses.append({"term": {"source_id": filters.source}})
    if filters.document_ids:
        clauses.append({"terms": {"document_id": list(filters.document_ids)}})
    if filters.collection_ids:
        clauses.append(collection_clause(filters.collection_ids))
    if filters.tag_prefixes:
        prefixes = [{"prefix": {"tags.keyword": prefix}} for prefix in filters.tag_prefixes]
        clauses.append({"bool": {"should": prefixes, "minimum_should_match": 1}})
    clauses.extend({"term": {"metadata_pairs": f"{key}={value}"}} for key, value in filters.metadata)
    if filters.source_types:
        clauses.append({"terms": {"source_type": list(filters.source_types)}})
    bounds = (("gte", filters.created_after), ("lt", filters.created_before))
    if created := {operator: value for operator, value in bounds if value is not None}:
        clauses.append({"range": {"created_at": created}})
    if filters.filename_glob is not None:
        clauses.append(regexp_clause("filename.glob", glob_to_regexp(filters.filename_glob)))
    return clauses


def lexical_request(
    query: str, size: int, filters: SearchFilters, *, exclude: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """The BM25 leg; None when the query has no searchable words. The same term selection as the
    SQLite leg; the english analyzer then stems them as FTS5's porter tokenizer does."""
    terms = query_terms(query)
    if not terms:
        return None
    return {
        "query": {
            "bool": {
                "must": {"multi_match": {"query": " ".join(terms), "fields": BM25_FIELDS, "type": "most_fields"}},
                "filter": filter_clauses(filters, exclude=exclude),
            }
        },
        "size": min(size, MAX_RESULT_WINDOW),
    }


def knn_request(
    vector: np.ndarray,
    k: int,
    num_candidates: int,
    filters: SearchFilters,
    *,
    exclude: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    k = min(k, MAX_NUM_CANDIDATES)
    return {
        "knn": {
            "field": "embedding",
            "query_vector": np.asarray(vector, dtype=np.float32).tolist(),
            "k": k,
            "num_candidates": min(max(num_candidates, k), MAX_NUM_CANDIDATES),
            "filter": filter_clauses(filters, exclude=exclude),
        },
        "size": k,
    }


def reference_query(reference: str, records: dict[str, Any]) -> dict[str, Any]:
    """``records`` (a bool filter) whose id is ``reference`` or starts with it, or whose source id is it or
    ends in ``/reference``; exact matches first."""

    def ranked(query: dict[str, Any], boost: float) -> dict[str, Any]:
        return {"constant_score": {"filter": query, "boost": boost}}

    escaped = reference.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")

    return {
        "bool": {
            "filter": records["bool"]["filter"],
            "should": [
                ranked({"term": {"document_id": reference}}, 100),
                ranked({"term": {"source_id": reference}}, 10),
                ranked({"prefix": {"document_id": reference}}, 1),
                ranked({"wildcard": {"source_id": {"value": "*/" + escaped}}}, 1),
            ],
            "minimum_should_match": 1,
        }
    }

"""The BM25 leg of the embedded store at scale: a tantivy index of every chunk, beside the SQLite file.

One document per chunk: its rowid (the key back into SQLite) and one text field holding the
chunk's heading and text, which is what FTS5's ``bm25()`` over (text, heading) with equal weights
scores (one length, one set of term frequencies). The analyzer mirrors the FTS5 tokenizer
(``porter unicode61 remove_diacritics 2``): split on non-alphanumerics, lowercase, fold accents,
English stemming. BM25 parameters are the same (k1 1.2, b 0.75).

Why not FTS5 alone: FTS5 scores *every* chunk that matches any query word before it can sort,
so an OR query costs time in proportion to the matching rows (52 ms at 100k chunks, ~0.5 s at
1M). Tantivy's block-max WAND skips the blocks that cannot reach the top k (1–15 ms at 1M).

This index is a cache: `search_indexes.py` keeps it in step with SQLite's change log and rebuilds
it when it is missing or stale. Only the process that holds the store's lock opens it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import Any

import tantivy

ANALYZER = "carrag_english"
WRITER_HEAP_BYTES = 64_000_000


def _analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("rowid", stored=False, indexed=True, fast=True)
    builder.add_text_field("body", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


def indexed_text(heading: str, text: str) -> str:
    return f"{heading}\n{text}" if heading else text


class LexicalIndex:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._schema = _schema()
        self._analyzer = _analyzer()
        self._index: tantivy.Index | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._view: LexicalView | None = None
        self.commits = 0  # commits and openings so far: a view is current while this has not moved

    def open(self, *, reset: bool) -> None:
        """Open the index on disk (``reset``: start empty)."""
        self.close()
        if reset:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            index = tantivy.Index(self._schema, path=str(self.directory), reuse=True)
        except (OSError, ValueError):  # unreadable or another schema: it is a cache, start again
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory.mkdir(parents=True)
            index = tantivy.Index(self._schema, path=str(self.directory), reuse=True)
        index.register_tokenizer(ANALYZER, self._analyzer)
        self._index = index
        self._writer = index.writer(WRITER_HEAP_BYTES, 1)
        self._view = LexicalView(index.searcher(), self._schema, self._analyzer)
        self.commits += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.rollback()  # nothing is pending between commits; drops the writer's lock
        self._index = self._writer = self._view = None

    def replace(self, touched: Iterable[int], rows: Iterable[tuple[int, str]]) -> None:
        """Forget every ``touched`` rowid, then index ``rows`` (rowid, text): replaying the same
        changes twice leaves the same index. Searched once committed and published."""
        assert self._writer is not None
        for rowid in touched:
            self._writer.delete_documents_by_term("rowid", int(rowid))
        for rowid, text in rows:
            self._writer.add_document(tantivy.Document(rowid=int(rowid), body=text))

    def clear(self) -> None:
        assert self._writer is not None
        self._writer.delete_all_documents()

    def commit(self) -> LexicalView:
        """Make what `replace` and `clear` did durable; searches see it once it is `publish`ed."""
        assert self._writer is not None and self._index is not None
        self._writer.commit()
        self._index.reload()
        self.commits += 1
        return LexicalView(self._index.searcher(), self._schema, self._analyzer)

    def publish(self, view: LexicalView) -> None:
        self._view = view

    @property
    def view(self) -> LexicalView | None:
        """The published state: a snapshot, which later commits leave as it is."""
        return self._view

    def analyze(self, text: str) -> list[str]:
        """The terms this index makes of ``text``."""
        return list(self._analyzer.analyze(text))

    @property
    def document_count(self) -> int:
        return self._view.searcher.num_docs if self._view is not None else 0


class LexicalView:
    def __init__(self, searcher: tantivy.Searcher, schema: tantivy.Schema, analyzer: tantivy.TextAnalyzer) -> None:
        self.searcher, self._schema, self._analyzer = searcher, schema, analyzer
        self._average_length: float | None = None

    def tokens(self, terms: Sequence[str]) -> list[str]:
        """Each word through the index's own analyzer (a word may become several tokens, "covid_19"
        -> covid, 19), once each."""
        return list(dict.fromkeys(token for term in terms for token in self._analyzer.analyze(term)))

    def average_length(self) -> float | None:
        """The average indexed length BM25 uses here, read from tantivy's explanation of the first
        search that found something (None before): tantivy does not expose it otherwise."""
        return self._average_length

    def search(self, terms: Sequence[str], k: int, skip: Container[int] = frozenset()) -> list[tuple[int, float]]:
        """The best ``k`` chunks for any of ``terms`` (plain words), as (rowid, BM25 score), leaving
        out the rowids in ``skip``."""
        if not terms or k <= 0:
            return []
        # Each token one optional term: no query syntax, no phrase positions needed.
        tokens = self.tokens(terms)
        if not tokens:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "body", token)) for token in tokens]
        )
        wanted = k
        while True:  # deeper only when skipped rowids took places in the top k
            hits = self.searcher.search(query, wanted, count=False).hits
            if hits and self._average_length is None:
                self._average_length = _average_length(json.loads(query.explain(self.searcher, hits[0][1]).to_json()))
            rowids = self.searcher.fast_field_values("rowid", [address for _, address in hits]) if hits else []
            found = [
                (int(rowid), float(score))
                for (score, _), rowid in zip(hits, rowids, strict=True)
                if rowid is not None and int(rowid) not in skip
            ]
            if len(found) >= k or len(hits) < wanted:
                return found[:k]
            wanted *= 4


def _average_length(explanation: dict[str, Any]) -> float | None:
    """The "avgdl" figure of a tantivy BM25 explanation, the first found."""
    if str(explanation.get("description", "")).startswith("avgdl"):
        return float(explanation["value"])
    for detail in explanation.get("details", ()):
        if (found := _average_length(detail)) is not None:
            return found
    return None

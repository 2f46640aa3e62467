"""BM25 over the rows tantivy has not caught up with: a small in-memory inverted index beside it.

Tantivy is committed in the background (100–500 ms a commit), so a search takes it as last
published and the rows changed after its position are missing or stale there. This index holds
exactly those rows — term → {rowid: frequency} and each row's length, analysed by tantivy's own
analyzer — and scores them with tantivy's BM25 (k1 1.2, b 0.75), taking the document frequencies
and average length from tantivy's published statistics plus its own rows, so their scores mix
with tantivy's hits. A search reads only the postings of its own terms: its cost follows the
query, not how far tantivy is behind. A deleted row stays as a key without postings, so that
tantivy's stale copy of it is skipped. Every publication of tantivy drops the rows it now holds,
so the index never holds more than the writes of the last catch-up interval — unless tantivy's
catch-up keeps failing: past `LIMIT` rows the index empties itself (`overflow`) and BM25 searches
go to FTS5 until tantivy has published every change up to that point.

`search_indexes.py` keeps it in step with SQLite's change log under the indexes' lock; the writer
analyses the rows it writes before it takes that lock (`SearchIndexes.read_write`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from carrag.services.stores.lexical_index import LexicalView

K1 = 1.2
B = 0.75
LIMIT = 20_000  # rows, ~27 KB each at 250 tokens (~0.5 GB full); it normally holds one catch-up interval (~2,000 at the bench's 2,000 chunks/s)


def _stored_length(byte: int) -> int:
    """The length tantivy scores for a field norm byte (Lucene's ``SmallFloat.byte4ToInt``): exact
    up to 24, then 4 significant bits."""
    if byte < 24:
        return byte
    value = byte - 24
    bits, shift = value & 0x07, (value >> 3) - 1
    return 24 + (bits if shift < 0 else (bits | 0x08) << shift)


# Tantivy keeps each row's length as one byte: the largest of these at most the true length.
STORED_LENGTHS = np.array([_stored_length(byte) for byte in range(256)], dtype=np.float64)


class ChangedRows:
    def __init__(self, analyze: Any) -> None:
        """``analyze`` turns text into tokens (tantivy's analyzer: the same terms it indexes)."""
        self._analyze = analyze
        self.position = -1  # every row changed after tantivy's position and up to this one is here
        self._changed: dict[int, int] = {}  # rowid -> the position of its last change
        self._lengths: dict[int, int] = {}  # rowid -> tokens, rows that exist only
        self._total_length = 0
        self._postings: dict[str, dict[int, int]] = {}
        self._terms: dict[int, list[str]] = {}  # rowid -> its distinct terms, to forget it
        self.postings_read = 0  # (term, row) pairs copied out for searches so far: the work they did
        self.overflowed_at: int | None = None  # emptied past `LIMIT`: tantivy must reach this position

    def reset(self, position: int) -> None:
        """Empty, current up to ``position`` (tantivy holds every change up to it)."""
        self.overflowed_at = None
        self.position = position
        self._changed.clear()
        self._lengths.clear()
        self._total_length = 0
        self._postings.clear()
        self._terms.clear()

    def __len__(self) -> int:
        return len(self._changed)

    def counted(self, changes: Iterable[tuple[int, int, str | None]]) -> CountedRows:
        """(rowid, position of its last change, its text now or None if deleted) analysed, as
        `apply_counted` takes them (the writer does it outside the indexes' lock)."""
        counted = CountedRows([], {})
        for rowid, seq, text in changes:
            if text is None:
                counted.rows.append((rowid, seq, None, 0))
                continue
            counts = Counter(self._analyze(text))
            counted.rows.append((rowid, seq, list(counts), sum(counts.values())))
            for term, frequency in counts.items():
                counted.postings.setdefault(term, {})[rowid] = frequency
        return counted

    def apply(self, position: int, changes: Iterable[tuple[int, int, str | None]]) -> None:
        """(rowid, position of its last change, its text now or None if deleted), up to ``position``."""
        self.apply_counted(position, self.counted(changes))

    def apply_counted(self, position: int, counted: CountedRows) -> None:
        """As `apply`, the changes `counted` already: their postings are merged a term at a time,
        not a row and term at a time. ``counted`` is taken over, not copied: apply it once."""
        for rowid, seq, terms, length in counted.rows:
            self._forget(rowid)
            self._changed[rowid] = seq
            if terms is not None:
                self._lengths[rowid] = length
                self._total_length += length
                self._terms[rowid] = terms
        for term, rows in counted.postings.items():
            postings = self._postings.get(term)
            if postings is None:
                self._postings[term] = rows
            else:
                postings.update(rows)
        self.position = max(self.position, position)

    def overflow(self, position: int) -> None:
        """Too many rows changed since tantivy's position: hold none until it publishes ``position``."""
        self.reset(position)
        self.overflowed_at = position

    def published(self, position: int) -> None:
        """Tantivy now holds every change up to ``position``: drop the rows it has caught up with."""
        if self.overflowed_at is not None:
            if position >= self.overflowed_at:
                self.reset(position)
            return
        for rowid in [rowid for rowid, seq in self._changed.items() if seq <= position]:
            self._forget(rowid)
        self.position = max(self.position, position)

    def _forget(self, rowid: int) -> None:
        if self._changed.pop(rowid, None) is None:
            return
        self._total_length -= self._lengths.pop(rowid, 0)
        for term in self._terms.pop(rowid, ()):
            postings = self._postings[term]
            del postings[rowid]
            if not postings:
                del self._postings[term]

    def terms(self, words: Sequence[str]) -> ChangedTerms:
        """What a search for ``words`` needs from here, copied under the indexes' lock: the changed
        rowids, the postings of the words' terms and the lengths they point to."""
        tokens = dict.fromkeys(token for word in words for token in self._analyze(word))
        postings = {token: dict(self._postings[token]) for token in tokens if token in self._postings}
        self.postings_read += sum(len(rows) for rows in postings.values())
        lengths = {rowid: self._lengths[rowid] for rows in postings.values() for rowid in rows}
        return ChangedTerms(frozenset(self._changed), postings, lengths, len(self._lengths), self._total_length)


@dataclass(slots=True)
class CountedRows:
    rows: list[tuple[int, int, list[str] | None, int]]  # (rowid, last change, its distinct terms or None, length)
    postings: dict[str, dict[int, int]]  # term -> {rowid: frequency}


@dataclass(frozen=True, slots=True)
class ChangedTerms:
    rowids: frozenset[int]  # every changed row: tantivy's copies of them are stale
    postings: dict[str, dict[int, int]]
    lengths: dict[int, int]
    rows: int  # changed rows that exist
    total_length: int

    def search(self, k: int, view: LexicalView | None) -> list[tuple[int, float]]:
        """The best ``k`` changed rows, as (rowid, BM25 score) on the scale of ``view``'s scores:
        its statistics plus these rows' (a replaced row counts twice until tantivy catches up)."""
        if not self.postings or k <= 0:
            return []
        indexed = view.searcher.num_docs if view is not None else 0
        indexed_length = (view.average_length() if view is not None else None) or 0.0
        if not indexed_length:
            indexed = 0  # its average is not known yet: these rows' own
        documents = indexed + self.rows
        average = (indexed * indexed_length + self.total_length) / documents
        found, contributions = [], []
        for token, postings in self.postings.items():
            frequency = len(postings) + (view.searcher.doc_freq("body", token) if indexed and view is not None else 0)
            idf = math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))
            rowids = np.fromiter(postings.keys(), np.int64, len(postings))
            tf = np.fromiter(postings.values(), np.float64, len(postings))
            # each row's length as tantivy stores it; the average is of true lengths (as tantivy's)
            length = STORED_LENGTHS[np.searchsorted(STORED_LENGTHS, [self.lengths[r] for r in postings], "right") - 1]
            found.append(rowids)
            contributions.append(idf * (K1 + 1) * tf / (tf + K1 * (1 - B + B * length / average)))
        rowids, which = np.unique(np.concatenate(found), return_inverse=True)
        scores = np.bincount(which, weights=np.concatenate(contributions))
        best = np.lexsort((rowids, -scores))[:k]
        return [(int(rowids[i]), float(scores[i])) for i in best]

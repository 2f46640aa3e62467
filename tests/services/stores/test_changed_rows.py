from __future__ import annotations

import random

import pytest

from carrag.services.stores.changed_rows import ChangedRows
from carrag.services.stores.lexical_index import LexicalIndex

WORDS = [f"w{n}" for n in range(60)]


def texts(count: int, seed: int) -> list[str]:
    chooser = random.Random(seed)
    # the same statistics as the caught-up index, and its stored (quantised) lengths
    return [" ".join(chooser.choices(WORDS[: 10 + n % 50], k=chooser.randint(3, 300))) for n in range(count)]


def test_changed_rows_score_as_tantivy_would_once_caught_up(tmp_path) -> None:
    base, later = texts(300, 1), texts(40, 2)
    index = LexicalIndex(tmp_path / "lexical")
    index.open(reset=True)
    index.replace((), enumerate(base))
    behind = index.commit()
    changed = ChangedRows(index.analyze)
    changed.reset(0)
    changed.apply(1, ((1000 + n, 1, text) for n, text in enumerate(later)))
    index.replace((), ((1000 + n, text) for n, text in enumerate(later)))
    caught_up = index.commit()
    for words in (["w3"], ["w12", "w40"], ["w1", "w7", "w55"]):
        behind.search(words, 1)  # tantivy's average length is known once it found something
        apart = changed.terms(words).search(10, behind)
        assert apart, words
        reference = dict(caught_up.search(words, 400))
        assert [rowid for rowid, _ in apart] == sorted(
            (r for r in reference if r >= 1000), key=lambda r: (-round(reference[r], 4), r)
        )[: len(apart)]
        for rowid, score in apart:
            assert score == pytest.approx(reference[rowid], rel=1e-4)


def test_deleted_and_replaced_rows_leave_no_postings_and_are_skipped_in_tantivy() -> None:
    changed = ChangedRows(str.split)
    changed.reset(0)
    changed.apply(2, [(1, 1, "walrus tusks"), (2, 2, "walrus")])
    changed.apply(4, [(1, 3, "seal pups"), (2, 4, None)])
    found = changed.terms(["walrus", "seal"])
    assert found.rowids == {1, 2}, "tantivy's copies of both are stale"
    assert found.search(5, None) == [(1, pytest.approx(found.search(5, None)[0][1]))]
    assert changed.terms(["walrus"]).search(5, None) == []


def test_a_publication_drops_the_rows_tantivy_now_holds() -> None:
    changed = ChangedRows(str.split)
    changed.reset(0)
    changed.apply(3, [(1, 1, "walrus"), (2, 3, "walrus colony")])
    changed.published(2)
    assert len(changed) == 1 and changed.terms(["walrus"]).rowids == {2}
    changed.published(3)
    assert len(changed) == 0 and changed.terms(["walrus"]).search(5, None) == []


def test_a_searchs_work_follows_its_terms_not_the_backlog() -> None:
    changed = ChangedRows(str.split)
    changed.reset(0)
    changed.apply(10, ((n, n, f"walrus {n}") for n in range(1, 11)))

    def postings_read() -> int:
        before = changed.postings_read
        assert len(changed.terms(["walrus"]).search(5, None)) == 5
        return changed.postings_read - before

    assert postings_read() == 10
    changed.apply(5010, ((n, n, f"seal colony {n}") for n in range(11, 5011)))
    assert postings_read() == 10


def test_before_tantivy_reveals_its_average_length_the_rows_are_scored_on_their_own_statistics(tmp_path) -> None:
    index = LexicalIndex(tmp_path / "lexical")
    index.open(reset=True)
    index.replace((), enumerate(texts(50, 3)))
    view = index.commit()  # never searched: its average length is unknown
    changed = ChangedRows(index.analyze)
    changed.reset(0)
    changed.apply(2, [(100, 1, "w1 w2 w2"), (101, 2, "w2 w3")])
    assert changed.terms(["w2"]).search(5, view) == changed.terms(["w2"]).search(5, None)

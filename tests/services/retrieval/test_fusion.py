from __future__ import annotations

import pytest

from carrag.services.retrieval.fusion import reciprocal_rank_fusion


def test_seed_example() -> None:
    """The worked example of seed 001: A is in both lists and wins; C (kNN #1) beats B (BM25 #2)."""
    fused = reciprocal_rank_fusion({"bm25": ["A", "B", "D"], "knn": ["C", "A", "E"]}, k=60)
    assert [item.key for item in fused][:3] == ["A", "C", "B"]
    scores = {item.key: item.score for item in fused}
    assert scores["A"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["C"] == pytest.approx(1 / 61)
    assert scores["B"] == pytest.approx(1 / 62)
    a = fused[0]
    assert a.ranks == {"bm25": 1, "knn": 2}


def test_ties_keep_first_seen_order() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["x"], "knn": ["y"]}, k=60)
    assert [item.key for item in fused] == ["x", "y"]


def test_duplicates_within_a_leg_count_once() -> None:
    fused = reciprocal_rank_fusion({"bm25": ["x", "x"], "knn": []}, k=10)
    assert fused[0].score == pytest.approx(1 / 11)


def test_k_controls_how_much_top_ranks_dominate() -> None:
    legs = {"bm25": ["a", "b", "c"], "knn": ["c", "x", "y"]}
    # with a small k, a single first place outweighs a first + third place less than with a large k
    small = {i.key: i.score for i in reciprocal_rank_fusion(legs, k=1)}
    large = {i.key: i.score for i in reciprocal_rank_fusion(legs, k=1000)}
    assert small["a"] > small["x"] and small["c"] > small["a"]
    assert large["c"] / large["a"] == pytest.approx(2, rel=0.01)


def test_empty_legs() -> None:
    assert reciprocal_rank_fusion({"bm25": [], "knn": []}) == []

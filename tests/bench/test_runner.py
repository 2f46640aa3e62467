import math
from pathlib import Path

import pytest

from carrag.bench.beir import load_beir
from carrag.bench.runner import (
    MEASURES,
    MODES,
    chunk_depth,
    eval_settings,
    evaluate,
    parse_modes,
    ranked_documents,
    score_run,
)
from carrag.services.errors import InvalidInput
from carrag.services.models import StoredChunk
from carrag.services.rerankers.flashrank import FlashrankReranker
from carrag.services.retrieval.search import SearchHit
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.tiny_cross_encoder import MODEL_NAME, make_model_folder

TINY = FIXTURES / "beir_tiny"


def _hit(external_id: str, chunk_index: int = 0) -> SearchHit:
    chunk = StoredChunk(f"doc-{external_id}", chunk_index, "text", 0, 4, "f", "s", [], external_id=external_id)
    return SearchHit(rank=0, chunk=chunk, text="text", score=0.0)


def test_documents_rank_at_their_best_chunk() -> None:
    hits = [_hit("a"), _hit("b"), _hit("a", 1), _hit("c")]
    assert ranked_documents(hits) == ["a", "b", "c"]
    assert ranked_documents(hits, limit=2) == ["a", "b"]


def test_scores_come_from_ir_measures() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"x": 1, "y": 1}, "q3": {"z": 1}}
    run = {"q1": ["b", "a"], "q2": ["x"], "q3": []}
    means, per_query = score_run(qrels, run)
    assert set(means) == set(MEASURES) == {"nDCG@10", "Recall@10", "Recall@100", "MRR@10"}
    assert per_query["q1"]["MRR@10"] == pytest.approx(0.5)
    assert per_query["q1"]["nDCG@10"] == pytest.approx(1 / math.log2(3))
    assert per_query["q2"]["Recall@10"] == pytest.approx(0.5)
    assert per_query["q3"] == dict.fromkeys(MEASURES, 0.0), "a query with no result counts as 0, not as missing"
    assert means["MRR@10"] == pytest.approx((0.5 + 1 + 0) / 3)


def test_depth_covers_a_hundred_documents() -> None:
    assert chunk_depth(documents=5000, chunks=5000) == 100
    assert chunk_depth(documents=5000, chunks=22000) == 500
    assert chunk_depth(documents=10, chunks=100_000) == 1000


def test_modes_are_validated() -> None:
    assert parse_modes(None) == list(MODES)
    assert parse_modes("knn, bm25") == ["knn", "bm25"]
    with pytest.raises(InvalidInput, match="Unknown mode"):
        parse_modes("bm25,dense")


async def test_eval_on_a_tiny_beir_dataset(tmp_path: Path, embedding_backend) -> None:
    make_model_folder(tmp_path / "models")
    settings = eval_settings(make_settings(tmp_path), tmp_path / "eval.db")
    reranker = FlashrankReranker(MODEL_NAME, tmp_path / "models")
    container = await open_container(settings, embedding_backend, reranker=reranker)
    try:
        report = await evaluate(container, load_beir(TINY, "test"))
    finally:
        await close_container(container)

    assert (report.documents, report.queries) == (12, 4)
    assert report.chunks == 12, "each short record is one chunk"
    assert [r.mode for r in report.results] == ["bm25", "knn", "hybrid", "hybrid+rerank"]
    for result in report.results:
        assert result.metrics is not None and set(result.metrics) == set(MEASURES)
        assert all(0.0 <= value <= 1.0 for value in result.metrics.values())
        assert set(result.per_query) == {"q1", "q2", "q3", "q4"}
    # q1 uses the exact words of d5, so BM25 ranks d5 first.
    assert report.result("bm25").per_query["q1"]["nDCG@10"] == 1.0
    # With 12 documents every relevant one is within the first 100.
    assert all(r.metrics["Recall@100"] == 1.0 for r in report.results if r.metrics)
    # Paraphrased questions are what the semantic leg is for.
    assert report.result("knn").metrics["MRR@10"] >= 0.75
    assert report.result("hybrid").metrics["nDCG@10"] >= 0.75
    summary = report.as_dict()
    assert summary["metrics_library"].startswith("ir-measures")
    assert summary["results"][3]["available"] is True


async def test_rerank_row_says_why_when_no_reranker_is_installed(tmp_path: Path, embedding_backend) -> None:
    settings = eval_settings(make_settings(tmp_path), tmp_path / "eval.db")
    container = await open_container(settings, embedding_backend)
    try:
        report = await evaluate(container, load_beir(TINY, "test").limit_queries(2), ["hybrid", "hybrid+rerank"])
    finally:
        await close_container(container)
    rerank = report.result("hybrid+rerank")
    assert rerank.metrics is None
    assert rerank.note is not None and rerank.note.startswith("n/a: ") and "model files not installed" in rerank.note
    assert report.as_dict()["results"][1]["available"] is False

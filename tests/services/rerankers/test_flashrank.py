from __future__ import annotations

import pytest

from carrag.services.errors import DependencyUnavailable
from carrag.services.rerankers.flashrank import FlashrankReranker
from tests.tiny_cross_encoder import MODEL_NAME, make_model_folder


async def test_scores_through_flashrank_with_a_model_made_here(tmp_path) -> None:
    make_model_folder(tmp_path)
    reranker = FlashrankReranker(MODEL_NAME, tmp_path)
    assert reranker.available, reranker.unavailable_reason
    scores = await reranker.scores(
        "oil filter for the engine",
        ["A recipe needs flour.", "Replace the oil filter when you change the engine oil.", "Oil is slippery."],
    )
    assert len(scores) == 3
    assert scores[1] > scores[2] > scores[0], "the passage sharing most question words scores highest"
    assert (await reranker.health()).status == "ok"


async def test_missing_model_is_reported_not_faked(tmp_path) -> None:
    reranker = FlashrankReranker(MODEL_NAME, tmp_path)
    assert not reranker.available
    assert "not installed" in reranker.unavailable_reason and str(tmp_path) in reranker.unavailable_reason
    health = await reranker.health()
    assert health.status == "unavailable" and health.detail == reranker.unavailable_reason
    with pytest.raises(DependencyUnavailable):
        await reranker.scores("q", ["p"])
    assert not (tmp_path / f"{MODEL_NAME}.zip").exists(), "no download was attempted"


async def test_a_missing_model_that_is_not_required_is_off_not_a_fault(tmp_path) -> None:
    reranker = FlashrankReranker(MODEL_NAME, tmp_path, required=False)
    health = await reranker.health()
    assert not reranker.available and health.status == "off" and "not installed" in health.detail


async def test_damaged_model_file_disables_reranking(tmp_path) -> None:
    folder = make_model_folder(tmp_path)
    (folder / "flashrank-MiniLM-L-12-v2_Q.onnx").write_bytes(b"not an onnx model")
    reranker = FlashrankReranker(MODEL_NAME, tmp_path)
    assert not reranker.available and "loading" in reranker.unavailable_reason

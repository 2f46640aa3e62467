"""The query pipeline's stages 1–3 over a small labelled corpus, with the real embedder and store."""

from __future__ import annotations

import json

import pytest

from carrag.services.container import Container
from carrag.services.models import SearchFilters
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.rerankers.flashrank import FlashrankReranker
from carrag.services.retrieval.search import EMPTY_INDEX_MESSAGE, NO_MATCH_MESSAGE
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.tiny_cross_encoder import MODEL_NAME, make_model_folder

CORPUS = FIXTURES / "corpus"
QUESTIONS = json.loads((CORPUS / "questions.json").read_text())["questions"]
TAGS = {
    "oil_service.txt": ["engine"],
    "coolant.txt": ["engine"],
    "fuel.txt": ["engine"],
    "battery.txt": ["engine"],
    "brakes.txt": ["safety"],
    "seats.txt": ["safety"],
    "tire_pressure.txt": ["wheels"],
}


@pytest.fixture(scope="module")
async def corpus_container(tmp_path_factory, embedding_backend):
    settings = make_settings(tmp_path_factory.mktemp("corpus"), chunk_size=200, chunk_overlap=50, tagger="off")
    container = await open_container(settings, embedding_backend)
    for path in sorted(CORPUS.glob("*.txt")):
        await container.ingestion.ingest_file(path.read_bytes(), path.name, IngestCommand(tags=TAGS.get(path.name, [])))
    yield container
    await close_container(container)


async def reciprocal_rank(container: Container, question: str, answer: str, mode: str) -> float:
    outcome = await container.search.search(SearchQuery(question, top_k=10, mode=mode, rerank=False), expand=False)
    files = list(dict.fromkeys(hit.chunk.filename for hit in outcome.hits))
    return 1 / (files.index(answer) + 1) if answer in files else 0.0


async def test_hybrid_beats_or_ties_each_leg(corpus_container: Container) -> None:
    mrr = {}
    for mode in ("bm25", "knn", "hybrid"):
        ranks = [await reciprocal_rank(corpus_container, q["question"], q["answer"], mode) for q in QUESTIONS]
        mrr[mode] = sum(ranks) / len(ranks)
    print("MRR by mode:", mrr)
    assert mrr["hybrid"] >= mrr["bm25"] and mrr["hybrid"] >= mrr["knn"], mrr
    assert mrr["hybrid"] >= 0.8, mrr
    # each leg has questions only it gets right at rank 1: the legs really are complementary
    firsts = {
        mode: {
            q["question"]
            for q in QUESTIONS
            if await reciprocal_rank(corpus_container, q["question"], q["answer"], mode) == 1.0
        }
        for mode in ("bm25", "knn")
    }
    assert firsts["bm25"] - firsts["knn"] and firsts["knn"] - firsts["bm25"], firsts


async def test_legs_return_depth_candidates_and_explain(corpus_container: Container) -> None:
    outcome = await corpus_container.search.search(
        SearchQuery("engine oil filter", top_k=3, rerank=False), expand=False
    )
    assert len(outcome.hits) == 3
    top = outcome.hits[0]
    assert top.bm25_rank is not None or top.knn_rank is not None
    assert top.rrf_score == pytest.approx(sum(1 / (60 + r) for r in (top.bm25_rank, top.knn_rank) if r is not None))
    assert set(outcome.timings_ms) >= {"embed_query", "retrieve", "fuse", "total"}


async def test_tag_filter_excludes(corpus_container: Container) -> None:
    outcome = await corpus_container.search.search(
        SearchQuery("oil filter", top_k=10, filters=SearchFilters(tags=("safety",)), rerank=False)
    )
    assert outcome.hits, "the filter still returns matches inside the tag"
    assert {hit.chunk.filename for hit in outcome.hits} <= {"brakes.txt", "seats.txt"}


async def test_source_glob_filter(corpus_container: Container) -> None:
    outcome = await corpus_container.search.search(
        SearchQuery("pressure", top_k=10, filters=SearchFilters(source="t*.txt"))
    )
    assert outcome.hits and {hit.chunk.filename for hit in outcome.hits} <= {"tire_pressure.txt", "towing.txt"}


async def test_unknown_tag_gives_no_match_message(corpus_container: Container) -> None:
    outcome = await corpus_container.search.search(SearchQuery("oil", top_k=5, filters=SearchFilters(tags=("nope",))))
    assert outcome.hits == [] and outcome.message == NO_MATCH_MESSAGE and not outcome.empty_index


async def test_expansion_merges_neighbours_without_repeating_overlap(corpus_container: Container) -> None:
    outcome = await corpus_container.search.search(SearchQuery("oil filter EcoBoost", top_k=5, rerank=False))
    document_text = (CORPUS / "oil_service.txt").read_text()
    top = next(hit for hit in outcome.hits if hit.chunk.filename == "oil_service.txt")
    assert len(top.text) > len(top.chunk.text)
    assert top.text in document_text, "the expanded passage is a contiguous span of the document, overlap once"
    keys = [(hit.chunk.document_id, index) for hit in outcome.hits for index in range(hit.window[0], hit.window[1] + 1)]
    assert len(keys) == len(set(keys)), "no chunk appears in two passages"


async def test_chunk_span_is_where_the_matched_chunk_is_in_its_passage(corpus_container: Container) -> None:
    """The UI sets the matched chunk apart in its widened passage and the CLI prints it: both by `chunk_span`."""
    outcome = await corpus_container.search.search(SearchQuery("oil filter EcoBoost", top_k=5, rerank=False))
    widened = [hit for hit in outcome.hits if hit.window and hit.window[0] < hit.chunk.chunk_index]
    assert widened, "a hit with neighbours before it"
    for hit in outcome.hits:
        span = hit.chunk_span
        assert span is not None and hit.text[span["start"] : span["end"]] == hit.chunk.text
    assert all(hit.chunk_span["start"] > 0 for hit in widened)


async def test_empty_index(container: Container) -> None:
    outcome = await container.search.search(SearchQuery("anything", top_k=5))
    assert outcome.hits == [] and outcome.empty_index and outcome.message == EMPTY_INDEX_MESSAGE


async def test_rerank_orders_by_cross_encoder_and_keeps_top_k(tmp_path, embedding_backend) -> None:
    make_model_folder(tmp_path / "models")
    settings = make_settings(tmp_path, chunk_size=200, chunk_overlap=50, tagger="off", rerank_enabled=False)
    reranker = FlashrankReranker(MODEL_NAME, tmp_path / "models")
    container = await open_container(settings, embedding_backend, reranker=reranker)
    for path in sorted(CORPUS.glob("*.txt")):
        await container.ingestion.ingest_file(path.read_bytes(), path.name, IngestCommand())
    plain = await container.search.search(SearchQuery("oil filter engine", top_k=2))
    assert not plain.reranked and all(hit.rerank_score is None for hit in plain.hits), "off by the global setting"
    reranked = await container.search.search(SearchQuery("oil filter engine", top_k=2, rerank=True), expand=False)
    assert reranked.reranked and len(reranked.hits) == 2
    scores = [hit.rerank_score for hit in reranked.hits]
    assert scores == sorted(scores, reverse=True) and all(s is not None for s in scores)
    assert "timings_ms" and "rerank" in reranked.timings_ms
    await close_container(container)


async def test_rerank_requested_without_model_is_reported(corpus_container: Container) -> None:
    outcome = await corpus_container.search.search(SearchQuery("oil", top_k=3, rerank=True))
    assert not outcome.reranked and "reranking skipped" in outcome.rerank_note
    assert all(hit.rerank_score is None for hit in outcome.hits)


async def test_rerank_auto_follows_whether_the_model_is_installed(tmp_path, embedding_backend) -> None:
    """RERANK_ENABLED=auto (the default): reranked when the model is installed; without it, plain
    results and no per-answer note (the embedded default ships no cross-encoder)."""
    settings = make_settings(tmp_path, chunk_size=200, chunk_overlap=50, tagger="off")
    assert settings.rerank_enabled == "auto"
    for installed in (False, True):
        models = tmp_path / f"models-{installed}"
        if installed:
            make_model_folder(models)
        reranker = FlashrankReranker(MODEL_NAME, models, required=False)
        container = await open_container(
            settings.model_copy(update={"data_dir": tmp_path / str(installed)}), embedding_backend, reranker=reranker
        )
        try:
            for path in sorted(CORPUS.glob("*.txt")):
                await container.ingestion.ingest_file(path.read_bytes(), path.name, IngestCommand())
            outcome = await container.search.search(SearchQuery("oil filter engine", top_k=2))
            assert outcome.reranked is installed
            assert outcome.rerank_note is None
        finally:
            await close_container(container)

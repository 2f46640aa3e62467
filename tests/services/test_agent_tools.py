from __future__ import annotations

import re
from pathlib import Path

import pytest

from carrag.services import agent_tools
from carrag.services.container import Container
from carrag.services.errors import InvalidInput
from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.rerankers.flashrank import FlashrankReranker
from carrag.services.retrieval.search import EMPTY_INDEX_MESSAGE, NO_MATCH_MESSAGE
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.tiny_cross_encoder import MODEL_NAME, make_model_folder

HEADER = re.compile(r"^\[Source: (?P<source>[^|\]]+) \| Score: (?P<score>-?\d+\.\d{3})(?: \| Page: (?P<page>\d+))?\]$")


def blocks(text: str) -> list[tuple[re.Match, str]]:
    parsed = []
    for block in text.split(agent_tools.PASSAGE_SEPARATOR):
        header, _, passage = block.partition("\n")
        match = HEADER.match(header)
        assert match, f"not a source header: {header!r}"
        assert passage.strip(), "every block carries its passage"
        parsed.append((match, passage))
    return parsed


async def ingest_corpus(container: Container) -> None:
    for name in ("brakes.txt", "oil_service.txt", "tire_pressure.txt"):
        await container.ingestion.ingest_file(
            (FIXTURES / "corpus" / name).read_bytes(), f"manuals/{name}", IngestCommand()
        )
    pdf = (FIXTURES / "2019_Ford_F150_Owners_Manual.pdf").read_bytes()
    await container.ingestion.ingest_file(pdf, "f150.pdf", IngestCommand())


async def test_search_documents_formats_blocks_with_the_knn_score_and_page(container: Container) -> None:
    await ingest_corpus(container)

    text = await agent_tools.search_documents(
        container.search, container.requests, "Which oil filter fits the engine?", top_k=4
    )

    parsed = blocks(text)
    assert 1 <= len(parsed) <= 4
    outcome = await container.search.search(SearchQuery("Which oil filter fits the engine?", top_k=4))
    assert not outcome.reranked, "no reranker model in this container"
    for (header, passage), hit in zip(parsed, outcome.hits, strict=True):
        assert header["source"] == hit.chunk.source_id
        expected = hit.knn_score if hit.knn_score is not None else hit.rrf_score
        assert header["score"] == f"{expected:.3f}"
        assert passage == hit.text.strip()
        assert header["page"] == (str(hit.page) if hit.page is not None else None)
    assert any(header["page"] for header, _ in parsed), "PDF passages show their page"


async def test_reranked_results_show_the_rerank_score(tmp_path: Path, embedding_backend) -> None:
    make_model_folder(tmp_path / "models")
    reranker = FlashrankReranker(MODEL_NAME, tmp_path / "models")
    container = await open_container(make_settings(tmp_path), embedding_backend, reranker=reranker)
    try:
        await ingest_corpus(container)
        text = await agent_tools.search_documents(
            container.search, container.requests, "brake pads wear indicators", top_k=2
        )
        outcome = await container.search.search(SearchQuery("brake pads wear indicators", top_k=2))
    finally:
        await close_container(container)
    assert outcome.reranked
    assert [header["score"] for header, _ in blocks(text)] == [f"{hit.rerank_score:.3f}" for hit in outcome.hits]


async def test_source_filter_takes_an_exact_id_or_a_glob(container: Container) -> None:
    await ingest_corpus(container)

    exact = blocks(
        await agent_tools.search_documents(
            container.search, container.requests, "tire pressure", source="manuals/brakes.txt"
        )
    )
    assert {header["source"] for header, _ in exact} == {"manuals/brakes.txt"}

    globbed = blocks(
        await agent_tools.search_documents(container.search, container.requests, "oil", top_k=10, source="manuals/*")
    )
    assert {header["source"] for header, _ in globbed} <= {
        "manuals/brakes.txt",
        "manuals/oil_service.txt",
        "manuals/tire_pressure.txt",
    }
    assert "f150.pdf" not in {header["source"] for header, _ in globbed}

    nothing = await agent_tools.search_documents(container.search, container.requests, "oil", source="*.docx")
    assert nothing.startswith(NO_MATCH_MESSAGE) and "'*.docx'" in nothing


async def test_an_empty_index_says_how_to_ingest(container: Container) -> None:
    assert await agent_tools.search_documents(container.search, container.requests, "anything") == EMPTY_INDEX_MESSAGE
    assert await agent_tools.list_sources(container.documents) == EMPTY_INDEX_MESSAGE


async def test_list_sources(container: Container) -> None:
    await ingest_corpus(container)
    assert await agent_tools.list_sources(container.documents) == "\n".join(
        [
            "4 ingested sources (source id, type):",
            "- f150.pdf (pdf)",
            "- manuals/brakes.txt (text)",
            "- manuals/oil_service.txt (text)",
            "- manuals/tire_pressure.txt (text)",
        ]
    )


@pytest.mark.parametrize(
    ("query", "top_k", "message"),
    [("   ", 5, "must not be empty"), ("oil", 0, "top_k must be between 1 and"), ("x" * 5000, 5, "MAX_QUESTION_CHARS")],
)
async def test_bad_arguments_are_invalid_input(container: Container, query: str, top_k: int, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        await agent_tools.search_documents(container.search, container.requests, query, top_k=top_k)


async def test_lexical_only_results_say_so_before_the_passages(container: Container, monkeypatch) -> None:
    """During an embedding model change without the store's model, results are BM25 alone; the agent
    is told, as /search's ``degraded`` field tells an API client."""
    import dataclasses

    await ingest_corpus(container)
    real_search = container.search.search
    note = "lexical (BM25) results only: the store's model cannot be loaded"

    async def lexical_only(request, **kwargs):
        return dataclasses.replace(await real_search(request, **kwargs), degraded=note)

    monkeypatch.setattr(container.search, "search", lexical_only)
    text = await agent_tools.search_documents(container.search, container.requests, "oil filter", top_k=2)
    first, _, passages = text.partition("\n\n")
    assert first == f"Note: {note}"
    assert len(blocks(passages)) >= 1

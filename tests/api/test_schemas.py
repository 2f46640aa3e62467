"""The wire types validate from the services' domain objects (routes, the local CLI client) and from
their own JSON (the HTTP CLI client) to the same values."""

from __future__ import annotations

from carrag.api.schemas.jobs import JobOut
from carrag.api.schemas.query import SearchResponse, Source, StreamDone, StreamError, StreamToken, stream_payload
from carrag.services.answering import Answer
from carrag.services.ingestion import IngestResult
from carrag.services.jobs import Job
from carrag.services.models import StoredChunk
from carrag.services.retrieval.search import SearchHit, SearchOutcome


def hit(explained: bool = False) -> SearchHit:
    chunk = StoredChunk("doc-1", 4, "the chunk", 10, 19, "f150.pdf", "manuals/f150.pdf", ["truck"], pages=[3, 4])
    return SearchHit(
        rank=1, chunk=chunk, text="before the chunk after", score=0.9, rrf_score=0.03, bm25_rank=2, knn_rank=1,
        window=(3, 5), merged_chunk_indexes=[4], explained=explained,
    )  # fmt: skip


def test_a_source_reads_its_chunk_fields_from_the_hit() -> None:
    source = Source.model_validate(hit())
    assert (source.document_id, source.source_id, source.chunk_index) == ("doc-1", "manuals/f150.pdf", 4)
    assert source.text == "before the chunk after" and source.pages == [3, 4] and source.page == 3
    assert source.tags == ["truck"] and source.window == [3, 5] and source.explain is None

    explained = Source.model_validate(hit(explained=True)).explain
    assert explained is not None and explained.chunk_text == "the chunk"
    assert (explained.bm25_rank, explained.knn_rank, explained.rrf_score) == (2, 1, 0.03)


def test_a_search_response_survives_its_own_json() -> None:
    outcome = SearchOutcome([hit(explained=True)], {"total": 1.5}, reranked=False, message=None)
    response = SearchResponse.model_validate(outcome)
    assert SearchResponse.model_validate(response.model_dump(mode="json")) == response


def test_a_job_reads_progress_result_and_timestamps() -> None:
    job = Job(job_id="j1", kind="file", source="a.txt")
    job.embedded(3, 8)
    job.result = IngestResult("doc-1", "a.txt", 8, ["x"], "ingested", "a.txt", timings_ms={"embed": 1.0})
    out = JobOut.model_validate(job)
    assert (out.progress.done, out.progress.total) == (3, 8)
    assert out.result is not None and out.result.document_id == "doc-1"
    assert out.created_at == job.created_at.isoformat()
    assert JobOut.model_validate(out.model_dump(mode="json")) == out


def test_stream_payloads_from_the_service_and_from_json_agree() -> None:
    summary = Answer("Hello", [], "generate", model="llm", duration_ms=12.0, timings_ms={"generate": 10.0})
    for kind, data, wire in [
        ("token", "Hello", StreamToken),
        ("done", summary, StreamDone),
        ("error", "generation failed", StreamError),
    ]:
        payload = stream_payload(kind, data)
        assert isinstance(payload, wire)
        assert stream_payload(kind, payload.model_dump(mode="json")) == payload
    sources = stream_payload("sources", [hit()])
    assert isinstance(sources, list) and sources[0].chunk_index == 4


class Recorded:
    """Passes attribute reads through to ``target``, noting the names read."""

    def __init__(self, target: object, names: list[str]) -> None:
        self._target, self._names = target, names

    def __getattr__(self, name: str) -> object:
        self._names.append(name)
        return getattr(self._target, name)


def test_a_search_answer_reads_only_attributes_its_objects_have() -> None:
    """The wire types try the domain objects' own paths first (``chunk.document_id``, ``hits``): a
    missing attribute tried first costs an AttributeError per field of every hit of every answer."""
    names: list[str] = []
    hits = [hit(explained=True), hit()]
    outcome = SearchOutcome([Recorded(h, names) for h in hits], {"total": 1.5}, reranked=False)  # type: ignore[misc]

    response = SearchResponse.model_validate(Recorded(outcome, names))

    assert response == SearchResponse.model_validate(SearchOutcome(hits, {"total": 1.5}, reranked=False))
    assert [name for name in names if not hasattr(hits[0], name) and not hasattr(outcome, name)] == []
    assert {"chunk", "hits", "text", "explain"} <= set(names)

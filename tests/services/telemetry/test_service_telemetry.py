"""The services report their work to the Telemetry the container passes them, and to nothing else."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from carrag.services.answering import GENERATION_STAGES
from carrag.services.errors import DependencyUnavailable
from carrag.services.jobs import InMemoryJobRepository, JobManager
from carrag.services.requests import AnswerQuery, IngestCommand, SearchQuery
from carrag.services.telemetry import NullTelemetry, Pipeline, Telemetry
from carrag.services.telemetry.prometheus import PrometheusTelemetry
from tests.conftest import close_container, make_settings, open_container
from tests.job_helpers import wait_for

NOTE = "# Brakes\n\nReplace the brake fluid every two years. The brake pads wear faster when towing.\n"


class RecordingTelemetry:
    """A Telemetry that keeps every event as (name, arguments)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.job_counts: list[Callable[[], Mapping[str, int]]] = []

    def named(self, name: str) -> list[Any]:
        return [arguments for event, arguments in self.events if event == name]

    def stages(self, pipeline: Pipeline, timings_ms: Mapping[str, float]) -> None:
        self.events.append(("stages", (pipeline, dict(timings_ms))))

    def texts_embedded(self, count: int, seconds: float) -> None:
        self.events.append(("texts_embedded", (count, seconds)))

    def chunks_indexed(self, count: int) -> None:
        self.events.append(("chunks_indexed", count))

    def document_ingested(self, status: str) -> None:
        self.events.append(("document_ingested", status))

    def job_finished(self, state: str) -> None:
        self.events.append(("job_finished", state))

    def dependency_failed(self, component: str) -> None:
        self.events.append(("dependency_failed", component))

    def watch_jobs(self, counts: Callable[[], Mapping[str, int]]) -> None:
        self.job_counts.append(counts)


def test_the_adapters_implement_every_event_of_the_protocol() -> None:
    for telemetry in (NullTelemetry(), PrometheusTelemetry(), RecordingTelemetry()):
        assert isinstance(telemetry, Telemetry), type(telemetry).__name__
    assert not isinstance(object(), Telemetry)


async def test_ingest_search_answer_and_jobs_report_to_the_containers_telemetry(
    tmp_path: Path, embedding_backend
) -> None:
    telemetry = RecordingTelemetry()
    container = await open_container(make_settings(tmp_path), embedding_backend, telemetry=telemetry)
    try:
        assert container.telemetry is telemetry
        first = await container.ingestion.ingest_text(NOTE, "brakes.md", IngestCommand())
        await container.ingestion.ingest_text(NOTE, "brakes.md", IngestCommand())
        assert telemetry.named("document_ingested") == ["ingested", "unchanged"]
        assert telemetry.named("chunks_indexed") == [first.chunk_count]  # the unchanged one wrote nothing
        assert sum(count for count, _ in telemetry.named("texts_embedded")) >= first.chunk_count
        ingest_stages = [timings for pipeline, timings in telemetry.named("stages") if pipeline == "ingest"]
        assert {"tag", "chunk", "embed", "index"} <= set(ingest_stages[0])

        telemetry.events.clear()
        await container.search.search(SearchQuery("brake fluid", top_k=3))
        [(pipeline, timings)] = telemetry.named("stages")
        assert pipeline == "query" and {"embed_query", "retrieve", "total"} <= set(timings)

        telemetry.events.clear()
        await container.answers.answer(AnswerQuery(SearchQuery("When is the brake fluid replaced?", top_k=3)))
        search_timings, answer_timings = (timings for _, timings in telemetry.named("stages"))
        assert "total" in search_timings
        assert answer_timings, "the answer reports its own stages"
        assert set(answer_timings) <= set(GENERATION_STAGES), "the search stages are not reported twice"

        telemetry.events.clear()
        job = await container.jobs.submit_file(NOTE.encode(), "towing.md", IngestCommand(source_id="towing"))
        await wait_for(lambda: job.finished, what="the job to finish")
        assert telemetry.named("job_finished") == ["done"]
        [counts] = telemetry.job_counts  # registered once, by the job manager
        assert counts()["done"] == 1
    finally:
        await close_container(container)


async def test_a_job_failed_by_a_dependency_counts_the_dependency(tmp_path: Path, embedding_backend) -> None:
    telemetry = RecordingTelemetry()
    # A directory where the database file should be: SQLite cannot open it.
    settings = make_settings(tmp_path, sqlite_path=tmp_path)
    container = await open_container(settings, embedding_backend, telemetry=telemetry)
    try:
        with pytest.raises(DependencyUnavailable, match="^store unavailable: cannot open SQLite"):  # no record
            await container.jobs.submit_file(NOTE.encode(), "brakes.md", IngestCommand())
        assert telemetry.named("job_finished") == [], "a job that could not be recorded was never accepted"

        # Job records kept apart from the broken store: the job is accepted, then fails on the store.
        jobs = JobManager(settings, container.ingestion, telemetry, InMemoryJobRepository())
        job = await jobs.submit_file(NOTE.encode(), "brakes.md", IngestCommand())
        await wait_for(lambda: job.finished, what="the job to finish")
        assert telemetry.named("job_finished") == ["failed"]
        assert telemetry.named("dependency_failed") == ["store"]
        await jobs.aclose()
    finally:
        await close_container(container)

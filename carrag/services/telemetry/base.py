"""The `Telemetry` protocol: the events services report, with no knowledge of where they go;
`NullTelemetry` is the default, so a service built alone reports nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, Protocol, runtime_checkable

Pipeline = Literal["query", "ingest"]


@runtime_checkable
class Telemetry(Protocol):
    def stages(self, pipeline: Pipeline, timings_ms: Mapping[str, float]) -> None:
        """A pipeline run finished; ``timings_ms`` maps its stages to their durations."""
        ...

    def texts_embedded(self, count: int, seconds: float) -> None:
        """One call to the embedding backend embedded ``count`` texts (cache hits excluded)."""
        ...

    def chunks_indexed(self, count: int) -> None:
        """A document's chunks were written to the store."""
        ...

    def document_ingested(self, status: str) -> None:
        """An ingest completed: ``ingested``, or ``unchanged`` when the content was already stored."""
        ...

    def job_finished(self, state: str) -> None:
        """An accepted ingest job reached its final state (done, failed, cancelled)."""
        ...

    def dependency_failed(self, component: str) -> None:
        """A dependency (store, embedder, llm, ...) failed a request or a job."""
        ...

    def watch_jobs(self, counts: Callable[[], Mapping[str, int]]) -> None:
        """``counts`` returns the jobs held right now, by state; an adapter may read it when asked."""
        ...


class NullTelemetry:
    """Reports nothing: the default of every service."""

    def stages(self, pipeline: Pipeline, timings_ms: Mapping[str, float]) -> None:
        pass

    def texts_embedded(self, count: int, seconds: float) -> None:
        pass

    def chunks_indexed(self, count: int) -> None:
        pass

    def document_ingested(self, status: str) -> None:
        pass

    def job_finished(self, state: str) -> None:
        pass

    def dependency_failed(self, component: str) -> None:
        pass

    def watch_jobs(self, counts: Callable[[], Mapping[str, int]]) -> None:
        pass

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from carrag.services.telemetry.prometheus import PrometheusTelemetry


def exported(telemetry: PrometheusTelemetry) -> dict[tuple[str, frozenset], float]:
    body, _ = telemetry.render()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def test_events_become_the_documented_metrics() -> None:
    telemetry = PrometheusTelemetry()
    telemetry.stages("query", {"retrieve": 12.0, "total": 20.0})
    telemetry.texts_embedded(5, 0.25)
    telemetry.chunks_indexed(4)
    telemetry.document_ingested("ingested")
    telemetry.job_finished("failed")
    telemetry.dependency_failed("store")
    telemetry.watch_jobs(lambda: {"queued": 2})

    found = exported(telemetry)

    assert (
        found[("carrag_stage_duration_seconds_sum", frozenset({"pipeline": "query", "stage": "retrieve"}.items()))]
        == 0.012
    )
    assert found[("carrag_embedded_texts_total", frozenset())] == 5
    assert found[("carrag_embedding_seconds_total", frozenset())] == 0.25
    assert found[("carrag_chunks_indexed_total", frozenset())] == 4
    assert found[("carrag_documents_ingested_total", frozenset({"status": "ingested"}.items()))] == 1
    assert found[("carrag_ingest_jobs_finished_total", frozenset({"state": "failed"}.items()))] == 1
    assert found[("carrag_dependency_errors_total", frozenset({"component": "store"}.items()))] == 1
    assert found[("carrag_ingest_jobs", frozenset({"state": "queued"}.items()))] == 2


def test_only_known_stages_become_label_values() -> None:
    telemetry = PrometheusTelemetry()
    telemetry.stages("ingest", {"parse": 1.0, "something_new": 2.0, "retrieve": 3.0})
    stages = {dict(labels)["stage"] for name, labels in exported(telemetry) if name.startswith("carrag_stage")}
    assert stages == {"parse"}

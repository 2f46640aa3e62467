import time
from pathlib import Path

from carrag.bench.bench import BenchConfig, run_bench
from carrag.bench.measuring import PeakRss
from tests.conftest import FIXTURES, make_settings


def test_peak_rss_sees_a_temporary_allocation() -> None:
    with PeakRss() as idle:
        time.sleep(0.05)
    with PeakRss() as during:
        block = bytearray(128 * 2**20)
        block[::4096] = b"x" * len(block[::4096])  # touch every page so it is resident
        time.sleep(0.1)  # several sampling intervals
        del block
    assert during.peak_mb >= idle.peak_mb + 100


async def test_quick_bench_measures_every_figure(tmp_path: Path, embedding_backend) -> None:
    config = BenchConfig.quick(FIXTURES / "2019_Ford_F150_Owners_Manual.pdf", FIXTURES / "beir_tiny", "test")
    lines: list[str] = []
    report = await run_bench(
        config, make_settings(tmp_path), report=lines.append, embedding_backend=embedding_backend, work_dir=tmp_path
    )

    assert report.machine["cores"] >= 1 and report.machine["cpu"]
    assert report.pdf["pages"] == 4 and report.pdf["pages_per_second"] > 0
    pipeline, raw = report.ingest["pipeline"], report.ingest["raw_embedder"]
    assert pipeline["chunks"] == raw["chunks"] == 12, "the raw embedder runs on exactly the pipeline's chunks"
    assert report.ingest["pipeline_over_raw"] > 0
    assert [figures.chunks for figures in report.queries] == [config.sizes[0], config.sizes[1]]
    for figures in report.queries:
        assert figures.search.p50 > 0 and figures.search.p95 >= figures.search.p50
        assert figures.embed_query.p50 > 0
        assert figures.peak_rss_mb > 0 and figures.peak_rss_serving_mb > 0
        assert 0 < figures.peak_anon_serving_mb <= figures.peak_rss_serving_mb
        assert figures.open_ms > 0 and figures.disk_mb > 0
        assert figures.stage_medians_ms["bm25_leg"] > 0 and figures.stage_medians_ms["knn_leg"] > 0
        assert figures.search_rerank is None and figures.rerank_note.startswith("n/a: ")
    assert any(line.startswith("Query at 300 chunks") for line in lines)

    states = [figures.state for figures in report.states]
    assert (
        states
        == [
            "reopened",
            "ingesting, during",
            "ingesting, after",
            "updating, during",
            "updating, after",
        ]
        * 2
    ), "every state at every size"
    for figures in report.states:
        assert figures.search.p50 > 0 and figures.embed.p50 > 0
        assert figures.knn_leg.p50 > 0 and figures.bm25_leg.p50 > 0 and figures.knn_store.p50 > 0
        assert (figures.written_per_second > 0) == figures.state.endswith("during")
    assert report.states[3].bench_data_mb > 0, "the edited documents are the bench's own, counted apart"
    reopened, ingested = report.states[5], report.states[7]
    assert ingested.chunks >= reopened.chunks * 1.1, "10 % more chunks arrived"


async def test_the_states_run_beside_a_peer_on_the_same_changes(tmp_path: Path, embedding_backend) -> None:
    config = BenchConfig.quick(FIXTURES / "2019_Ford_F150_Owners_Manual.pdf", FIXTURES / "beir_tiny", "test")
    config.sizes, config.peers = (200,), ("numpy",)
    report = await run_bench(
        config,
        make_settings(tmp_path),
        report=lambda line: None,
        embedding_backend=embedding_backend,
        work_dir=tmp_path,
    )

    rows = {(row.state, row.store): row for row in report.peers}
    for state in ("reopened", "ingesting, after", "updating, after"):
        carrag, exact = rows[(state, "carrag")], rows[(state, "numpy")]
        assert carrag.knn.p50 > 0 and exact.knn.p50 > 0
        assert carrag.ndcg_at_10 is not None and exact.ndcg_at_10 is not None
        assert abs(carrag.ndcg_at_10 - exact.ndcg_at_10) <= 0.002, f"{state}: the kNN leg stays exact"
    assert rows[("ingesting, during", "numpy")].knn.samples_ms, "the peer was queried while it took the changes"

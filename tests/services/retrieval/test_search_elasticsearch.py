"""A search on Elasticsearch expands its winners from the neighbours read with the hits: no request
after the legs, and the same passages `get_windows` would give."""

from __future__ import annotations

import pytest

from carrag.services.requests import IngestCommand, SearchQuery
from carrag.services.retrieval.expansion import stitch
from tests.conftest import ES_TEST_REFRESH_INTERVAL, close_container, drop_es_index, es_index_name, make_settings
from tests.conftest import open_container as open_test_container

pytestmark = pytest.mark.elasticsearch

MANUAL = "\n\n".join(
    f"Section {n}. The {word} needs checking every {n * 1000} km; replace the {word} if it is worn."
    for n, word in enumerate(["oil filter", "brake pad", "spark plug", "coolant hose", "wiper blade", "air filter"])
).encode()


async def test_expansion_needs_no_request_after_the_legs(tmp_path, es_url: str, embedding_backend, monkeypatch) -> None:
    settings = make_settings(
        tmp_path,
        store="elasticsearch",
        elasticsearch_url=es_url,
        elasticsearch_index=es_index_name("carrag_windows"),
        elasticsearch_refresh_interval=ES_TEST_REFRESH_INTERVAL,
        chunk_size=120,
        chunk_overlap=20,
        tagger="off",
        neighbour_window=1,
        retrieval_k_multiplier=1,  # every candidate is kept, so every winner's window is read with the legs
    )
    container = await open_test_container(settings, embedding_backend)
    try:
        await container.ingestion.ingest_file(MANUAL, "manual.txt", IngestCommand())
        store = container.store
        asked: list[object] = []
        get_windows = store.get_windows

        async def traced_get_windows(centres, radius):
            asked.append(list(centres))
            return await get_windows(centres, radius)

        monkeypatch.setattr(store, "get_windows", traced_get_windows)
        outcome = await container.search.search(SearchQuery("when to replace the spark plug", top_k=3, rerank=False))
        assert outcome.hits and asked == []
        assert any(hit.window and hit.window[0] < hit.window[1] for hit in outcome.hits), "passages hold neighbours"

        for hit in outcome.hits:
            assert hit.window is not None
            first, last = hit.window
            window = [(hit.chunk.document_id, index) for index in range(first, last + 1)]
            assert hit.text == stitch(await get_windows(window, 0)), "the passage is the stored window"
            assert first == max(min(hit.merged_chunk_indexes) - 1, 0)
    finally:
        await drop_es_index(container.store.client, settings.elasticsearch_index)  # type: ignore[attr-defined]
        await close_container(container)

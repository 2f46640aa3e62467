"""SQLite under concurrent readers and writers: many ingests and searches through the API at once,
while other code in the process writes to and reads the store directly (as `carrag ingest` in the
same process would). WAL lets readers run beside the writer; writes take turns on the writer thread,
so no client ever sees "database is locked", and every write lands whole. A second *process* is
refused (tests/services/stores/test_sqlite_indexes.py)."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime

import httpx
import numpy as np

from carrag.api.main import create_app
from carrag.services.ids import new_document_id
from carrag.services.models import Chunk, DocumentRecord, SearchFilters
from tests.conftest import close_container, make_settings, open_container

TOPICS = ["tire pressure", "oil change", "brake fluid", "coolant level", "wiper blades", "battery terminals"]


def text_for(i: int) -> bytes:
    topic = TOPICS[i % len(TOPICS)]
    return "".join(
        f"Document {i}, part {p}: how to check the {topic} on model {i * 31 + p}. Step {p} of the procedure.\n\n"
        for p in range(12)
    ).encode()


async def test_concurrent_ingests_searches_and_direct_store_writes(tmp_path, embedding_backend) -> None:
    settings = make_settings(
        tmp_path,
        max_concurrent_ingests=2,
        ingest_queue_size=64,
        max_concurrent_queries=4,
        query_queue_timeout=60,
        rerank_enabled=False,
        tagger="keywords",
    )
    container = await open_container(settings, embedding_backend)
    identity = await container.embedder.embedding_identity()
    other_writer = container.store
    app = create_app(container=container)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    rng = random.Random(11)

    async with httpx.AsyncClient(transport=transport, base_url="http://carrag.test", timeout=120) as client:
        await client.post("/ingest/file", files={"file": ("seed.txt", text_for(999))})

        async def ingest(i: int) -> httpx.Response:
            return await client.post("/ingest/file", files={"file": (f"doc-{i}.txt", text_for(i))})

        async def search(i: int) -> httpx.Response:
            await asyncio.sleep(rng.random() * 0.5)
            return await client.post("/search", json={"question": TOPICS[i % len(TOPICS)], "top_k": 3})

        async def listing(i: int) -> httpx.Response:
            await asyncio.sleep(rng.random() * 0.5)
            return await client.get("/documents", params={"limit": 5})

        async def foreign_write(i: int) -> str:
            chunks = [
                Chunk(chunk_index=c, text=f"foreign {i} chunk {c} about {TOPICS[c % 6]}", char_start=0, char_end=10)
                for c in range(20)
            ]
            vectors = np.random.default_rng(i).standard_normal((20, identity.dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            record = DocumentRecord(
                document_id=new_document_id(),
                filename=f"foreign-{i}.txt",
                source_id=f"foreign-{i}.txt",
                source_type="text",
                content_hash=str(i),
                chunk_count=20,
                tags=[],
                metadata={},
                created_at=datetime.now(UTC).isoformat(),
            )
            await other_writer.write_document(record, chunks, vectors, identity)
            hits = await other_writer.vector_search(vectors[0], 3, SearchFilters())
            assert hits, "the second store reads while the first writes"
            return record.document_id

        results = await asyncio.gather(
            *(ingest(i) for i in range(16)),
            *(search(i) for i in range(40)),
            *(listing(i) for i in range(20)),
            *(foreign_write(i) for i in range(10)),
            return_exceptions=True,
        )

        failures = [r for r in results if isinstance(r, BaseException)]
        assert failures == []
        responses = [r for r in results if isinstance(r, httpx.Response)]
        bad = [(r.request.url.path, r.status_code, r.text[:200]) for r in responses if r.status_code != 200]
        assert bad == []
        assert not any("locked" in r.text for r in responses)

        listed = (await client.get("/documents", params={"limit": 500})).json()
        assert listed["total"] == 1 + 16 + 10
        assert len({item["source_id"] for item in listed["items"]}) == listed["total"], "no duplicates"
        # the API's searches see the other writer's vectors (the indexes follow SQLite's change log)
        foreign = await container.store.vector_search(
            np.random.default_rng(3).standard_normal(identity.dimension).astype(np.float32), 200, SearchFilters()
        )
        assert any(hit.chunk.source_id.startswith("foreign-") for hit in foreign)

    assert await container.store.check_integrity() == []
    await close_container(container)

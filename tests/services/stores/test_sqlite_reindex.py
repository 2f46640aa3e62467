"""`carrag reindex` on the embedded store (issue 14, item 5): the configured model's vectors are built
beside the live ones, searches use the old vectors until one transaction swaps them in, and a run
killed half-way (kill -9) continues where it stopped."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import numpy as np

from carrag.services import reindexing
from carrag.services.models import EmbeddingIdentity, SearchFilters
from carrag.services.reindexing import reindex_sqlite
from carrag.services.stores.sqlite import SqliteStore
from carrag.services.stores.sqlite_reindex import SqliteReindex
from tests.services.stores.test_sqlite import IDENTITY, chunks_of, record, vectors

NEW_MODEL = EmbeddingIdentity("test:new-model", 3)
NO_FILTER = SearchFilters()


def new_vector(text: str) -> np.ndarray:
    """The "new model": a 3-d vector seeded by the text (the store's old model is 4-d)."""
    row = np.random.default_rng(zlib.crc32(text.encode())).normal(size=3).astype(np.float32)
    return row / np.linalg.norm(row)


class NewModel:
    def __init__(self, pause: float = 0.0) -> None:
        self.texts: list[str] = []
        self.pause = pause
        self.on_batch = None

    async def embedding_identity(self) -> EmbeddingIdentity:
        return NEW_MODEL

    async def embed_documents(self, texts, progress=None) -> np.ndarray:
        self.texts += list(texts)
        if self.on_batch is not None:
            await self.on_batch()
        if self.pause:
            time.sleep(self.pause)
        return np.array([new_vector(text) for text in texts], dtype=np.float32)


async def filled_store(path: Path, documents: int) -> SqliteStore:
    store = SqliteStore(path)
    await store.open()
    matrix = vectors(documents * 2, 11)
    for n in range(documents):
        await store.write_document(
            record(f"d{n}", f"{n}.txt"),
            chunks_of(f"alpha {n:03d}", f"beta {n:03d}"),
            matrix[2 * n : 2 * n + 2],
            IDENTITY,
        )
    return store


def live_vectors(path: Path) -> dict[str, bytes]:
    connection = sqlite3.connect(path)
    try:
        return dict(connection.execute("SELECT text, embedding FROM chunks").fetchall())
    finally:
        connection.close()


async def test_new_vectors_are_built_beside_the_old_and_swapped_in_at_the_end(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(reindexing, "BATCH_CHUNKS", 4)
    path = tmp_path / "s.db"
    store = await filled_store(path, 6)
    old_vectors = live_vectors(path)
    old_query = vectors(12, 11)[5]  # chunk "beta 002" in the old model's space
    model = NewModel()
    seen: list[tuple[str | None, str, bool]] = []

    async def between_batches() -> None:
        # searches are served by the old vectors, with the old model recorded, until the swap
        hits = await store.vector_search(old_query, 1, NO_FILTER)
        identity = await store.embedding_identity()
        live = live_vectors(path)
        unchanged = all(blob == old_vectors.get(text, blob) for text, blob in live.items())
        seen.append((hits[0].chunk.text, identity.model if identity else "", unchanged))
        if len(seen) == 2:  # a document arrives and another goes during the run
            await store.write_document(
                record("late", "late.txt", chunks=1), chunks_of("gamma late"), vectors(1, 3), IDENTITY
            )
            await store.delete_document("d0")

    model.on_batch = between_batches
    progress: list[tuple[int, int]] = []
    _, passes = await reindex_sqlite(store, model, lambda done, total: progress.append((done, total)))  # type: ignore[arg-type]

    assert seen and all(s == ("beta 002", "test:model", True) for s in seen)
    assert passes == 1, "the late chunk has a higher rowid: the same pass reached it"
    assert "gamma late" in model.texts
    assert progress[-1][0] == progress[-1][1] == 11  # 12 chunks, minus d0's two, plus the late one
    assert await store.embedding_identity() == NEW_MODEL
    after = live_vectors(path)
    assert set(after) == {t for t in old_vectors if not t.endswith("000")} | {"gamma late"}
    for text, blob in after.items():
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), new_vector(text)), text
    hits = await store.vector_search(new_vector("beta 004"), 1, NO_FILTER)
    assert hits[0].chunk.text == "beta 004", "the indexes beside the file were rebuilt from the new vectors"
    assert [h.chunk.text for h in await store.lexical_search("gamma", 3, NO_FILTER)] == ["gamma late"]
    assert await SqliteReindex(store).target() is None
    assert await store.check_integrity() == []
    await store.close()


async def test_a_chunk_written_behind_the_cursor_gets_another_pass(tmp_path, monkeypatch) -> None:
    """A rowid freed by a delete can be given to a new chunk; it must not keep the old one's vector."""
    monkeypatch.setattr(reindexing, "BATCH_CHUNKS", 100)
    store = await filled_store(tmp_path / "s.db", 2)
    model = NewModel()

    async def replace_the_last_document() -> None:
        if len(model.texts) == 4:  # after the first (only) batch: d1 (the highest rowids) is re-written
            await store.delete_document("d1")
            await store.write_document(
                record("d1b", "1b.txt", chunks=1), chunks_of("delta new"), vectors(1, 5), IDENTITY
            )

    model.on_batch = replace_the_last_document
    _, passes = await reindex_sqlite(store, model)  # type: ignore[arg-type]
    assert passes == 2 and model.texts[-1] == "delta new", "the swap found the new chunk without its vector"
    vectors_now = live_vectors(tmp_path / "s.db")
    assert np.allclose(np.frombuffer(vectors_now["delta new"], dtype=np.float32), new_vector("delta new"))
    await store.close()


RUN_REINDEX = textwrap.dedent(
    """
    import asyncio, sys, time
    from carrag.services import reindexing
    from carrag.services.stores.sqlite import SqliteStore
    from tests.services.stores.test_sqlite_reindex import NewModel

    reindexing.BATCH_CHUNKS = 2

    async def main() -> None:
        store = SqliteStore(sys.argv[1])
        await store.open()
        model = NewModel(pause=0.2)
        await reindexing.reindex_sqlite(store, model, lambda done, total: print(done, total, flush=True))
        print("finished", flush=True)

    asyncio.run(main())
    """
)


async def test_a_reindex_killed_half_way_continues_where_it_stopped(tmp_path, monkeypatch) -> None:
    path = tmp_path / "s.db"
    store = await filled_store(path, 10)  # 20 chunks
    await store.close()
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_REINDEX, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert process.stdout is not None
    for line in process.stdout:
        done = int(line.split()[0])
        if done >= 8:
            os.kill(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL

    store = SqliteStore(path)
    await store.open()
    assert await SqliteReindex(store).target() == NEW_MODEL, "the killed run left its target and batches"
    assert await store.embedding_identity() == IDENTITY, "nothing was swapped: the old vectors are live"
    kept = (await SqliteReindex(store).counts()).done
    assert 8 <= kept < 20
    monkeypatch.setattr(reindexing, "BATCH_CHUNKS", 3)
    model = NewModel()
    embedded, _ = await reindex_sqlite(store, model)  # type: ignore[arg-type]
    assert embedded == 20 - kept and len(model.texts) == 20 - kept, "only what the killed run had not committed"
    assert await store.embedding_identity() == NEW_MODEL
    for text, blob in live_vectors(path).items():
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), new_vector(text)), text
    await store.close()


async def test_a_run_for_another_model_starts_again(tmp_path) -> None:
    store = await filled_store(tmp_path / "s.db", 2)
    reindex = SqliteReindex(store)
    await reindex.begin(EmbeddingIdentity("test:other", 3))
    other = EmbeddingIdentity("test:other", 3)
    await reindex.save(other, await reindex.pending(0, 2), np.ones((2, 3), dtype=np.float32))
    assert (await reindex.counts()).done == 2
    assert (await reindex.begin(NEW_MODEL)).done == 0, "another model's vectors are dropped"
    await store.wipe()
    assert await reindex.target() is None, "a reset forgets an unfinished reindex"
    await store.close()

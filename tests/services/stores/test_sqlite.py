"""SQLite-specific guarantees. Behaviour shared with every store is in test_store_contract.py."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import numpy as np
import pytest

from carrag.services.errors import DependencyUnavailable, EmbeddingModelMismatch
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, SearchFilters
from carrag.services.stores.sqlite import SqliteStore

IDENTITY = EmbeddingIdentity("test:model", 4)


def record(document_id: str, source_id: str, *, tags: list[str] | None = None, chunks: int = 2) -> DocumentRecord:
    return DocumentRecord(
        document_id=document_id,
        filename=source_id,
        source_id=source_id,
        source_type="text",
        content_hash=document_id,
        chunk_count=chunks,
        tags=tags or [],
        metadata={},
        created_at=datetime.now(UTC).isoformat(),
    )


def chunks_of(*texts: str) -> list[Chunk]:
    return [Chunk(i, t, i * 100, i * 100 + len(t)) for i, t in enumerate(texts)]


def vectors(n: int, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture
async def store(tmp_path):
    store = SqliteStore(tmp_path / "store.db")
    await store.open()
    yield store
    await store.close()


def raw(store: SqliteStore, sql: str, *params):
    connection = sqlite3.connect(store.path)
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


async def test_wal_mode_and_fts_in_sync(store: SqliteStore) -> None:
    await store.write_document(
        record("d1", "a.txt"), chunks_of("engine oil filter", "tire pressure"), vectors(2), IDENTITY
    )
    assert raw(store, "PRAGMA journal_mode")[0][0] == "wal"
    assert raw(store, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'filter'")[0][0] == 1
    await store.delete_document("d1")
    assert raw(store, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'filter'")[0][0] == 0
    assert raw(store, "SELECT count(*) FROM chunks")[0][0] == 0


async def test_vectors_stored_as_float32_blobs(store: SqliteStore) -> None:
    matrix = vectors(2)
    await store.write_document(record("d1", "a.txt"), chunks_of("a", "b"), matrix, IDENTITY)
    rows = raw(store, "SELECT embedding FROM chunks ORDER BY chunk_index")
    assert np.allclose(np.frombuffer(rows[0][0], dtype=np.float32), matrix[0])
    assert raw(store, "SELECT value FROM meta WHERE key = 'embedding_dimension'")[0][0] == "4"


async def test_failed_write_leaves_nothing(store: SqliteStore) -> None:
    bad = chunks_of("one", "two")
    bad[1].chunk_index = 0  # violates UNIQUE(document_id, chunk_index) half-way through the insert
    with pytest.raises(Exception):
        await store.write_document(record("d1", "a.txt"), bad, vectors(2), IDENTITY)
    assert raw(store, "SELECT count(*) FROM documents")[0][0] == 0
    assert raw(store, "SELECT count(*) FROM chunks")[0][0] == 0
    assert raw(store, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'one'")[0][0] == 0


async def test_replacement_is_one_transaction(store: SqliteStore) -> None:
    await store.write_document(record("old", "a.txt"), chunks_of("old words here"), vectors(1), IDENTITY)
    replaced = await store.write_document(record("new", "a.txt"), chunks_of("new words here"), vectors(1, 1), IDENTITY)
    assert replaced == "old"
    assert raw(store, "SELECT document_id FROM documents") == [("new",)]
    assert [h.chunk.document_id for h in await store.lexical_search("words", 10, SearchFilters())] == ["new"]


async def test_model_mismatch_is_refused(store: SqliteStore) -> None:
    await store.write_document(record("d1", "a.txt"), chunks_of("a"), vectors(1), IDENTITY)
    with pytest.raises(EmbeddingModelMismatch, match="test:model"):
        await store.write_document(
            record("d2", "b.txt"), chunks_of("b"), vectors(1), EmbeddingIdentity("other:model", 4)
        )


async def test_fts_query_syntax_is_never_user_controlled(store: SqliteStore) -> None:
    await store.write_document(
        record("d1", "a.txt"), chunks_of('engine "oil" NEAR(filter) AND *'), vectors(1), IDENTITY
    )
    for question in ['"unbalanced', "NEAR(", "a AND OR NOT", "*", "col:umn", "()", "^start"]:
        await store.lexical_search(question, 5, SearchFilters())  # must not raise
    hits = await store.lexical_search('oil" OR filter', 5, SearchFilters())
    assert len(hits) == 1


async def test_porter_stemming(store: SqliteStore) -> None:
    await store.write_document(
        record("d1", "a.txt"), chunks_of("Replacing the filters regularly"), vectors(1), IDENTITY
    )
    assert await store.lexical_search("replace filter", 5, SearchFilters())


async def test_first_write_after_a_search_on_the_empty_store(store: SqliteStore) -> None:
    """Regression: a kNN search on the empty store caches a 0×0 matrix; the first write must still
    extend it (it used to fail with a broadcast error after the document was committed)."""
    assert await store.vector_search(vectors(1)[0], 5, SearchFilters()) == []
    matrix = vectors(2)
    await store.write_document(record("d1", "a.txt"), chunks_of("a", "b"), matrix, IDENTITY)
    hits = await store.vector_search(matrix[1], 5, SearchFilters())
    assert [h.chunk.chunk_index for h in hits][0] == 1
    await store.write_document(record("d2", "b.txt"), chunks_of("c"), vectors(1, 7), IDENTITY)
    assert len(await store.vector_search(matrix[0], 5, SearchFilters())) == 3


async def test_a_read_that_fts5_could_not_open_is_run_once_more(tmp_path) -> None:
    """Seen once under the API fuzz test: `vtable constructor failed: chunks_fts` answered a read with
    503, though the same read runs fine a moment later (`sqlite._read_retrying`)."""
    store = SqliteStore(tmp_path / "carrag.db")
    await store.open()
    calls = 0

    def flaky(connection: sqlite3.Connection) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise sqlite3.OperationalError("vtable constructor failed: chunks_fts")
        return connection.execute("SELECT count(*) FROM chunks").fetchone()[0]

    assert await store._read(flaky) == 0 and calls == 2

    def broken(connection: sqlite3.Connection) -> int:
        raise sqlite3.OperationalError("vtable constructor failed: chunks_fts")

    with pytest.raises(DependencyUnavailable, match="vtable constructor failed"):
        await store._read(broken)

    def other(connection: sqlite3.Connection) -> int:
        nonlocal calls
        calls += 1
        raise sqlite3.OperationalError("no such table: nothing")

    calls = 0
    with pytest.raises(DependencyUnavailable, match="no such table"):
        await store._read(other)
    assert calls == 1, "only that error is tried again"
    await store.close()


async def test_job_records_change_no_schema_under_running_searches(tmp_path) -> None:
    """The cause of that error: the jobs table was created by the job repository's own connection on
    its first use, while searches ran, and an FTS5 read that meets another connection's schema change
    can fail. The store now creates every table when it opens the file, so the first job record
    changes nothing in the schema."""
    from carrag.services.stores.sqlite_jobs import SqliteJobRepository

    store = SqliteStore(tmp_path / "carrag.db")
    await store.open()
    try:
        before = raw(store, "PRAGMA schema_version")[0][0]
        assert raw(store, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'jobs'") == [("jobs",)]
        repository = SqliteJobRepository(store.path)
        assert (
            await repository._run(lambda connection: connection.execute("SELECT count(*) FROM jobs").fetchone()[0]) == 0
        )
        assert raw(store, "PRAGMA schema_version")[0][0] == before
    finally:
        await store.close()


async def test_the_searches_model_check_is_read_once_between_writes(store: SqliteStore, monkeypatch) -> None:
    """`query_identity` answers from memory until the store writes: the first write records the model,
    a wipe forgets it; a read that a write overtook is read again."""
    reads = 0
    read = store.embedding_identity

    async def counted() -> EmbeddingIdentity | None:
        nonlocal reads
        reads += 1
        return await read()

    monkeypatch.setattr(store, "embedding_identity", counted)
    assert await store.query_identity() is None and await store.query_identity() is None
    assert reads == 1
    await store.write_document(record("a", "a.txt", chunks=1), chunks_of("kestrel"), vectors(1), IDENTITY)
    assert await store.query_identity() == IDENTITY and await store.query_identity() == IDENTITY
    assert reads == 2
    await store.wipe()
    assert await store.query_identity() is None and reads == 3

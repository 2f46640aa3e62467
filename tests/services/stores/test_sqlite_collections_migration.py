"""A SQLite store from before collections opens with every document in ``default``, nothing lost."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np

from carrag.services.models import DEFAULT_COLLECTION, Collection, SearchFilters
from carrag.services.stores.sqlite import SCHEMA, SqliteStore
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

DOCUMENTS_BEFORE_COLLECTIONS = """CREATE TABLE IF NOT EXISTS documents (
    document_id TEXT PRIMARY KEY,
    source_id   TEXT NOT NULL UNIQUE,
    filename    TEXT NOT NULL,
    source_type TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    tags        TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    title       TEXT,
    external_id TEXT,
    created_at  TEXT NOT NULL
);
"""


def old_schema() -> str:
    start = SCHEMA.index("CREATE TABLE IF NOT EXISTS collections (")
    end = SCHEMA.index(");", SCHEMA.index("CREATE TABLE IF NOT EXISTS documents (")) + 3
    return SCHEMA[:start] + DOCUMENTS_BEFORE_COLLECTIONS + SCHEMA[end:]


def make_old_store(path, vectors: np.ndarray) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(old_schema())
    connection.execute("PRAGMA journal_mode = WAL")
    connection.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)",
        [("index_epoch", "e1"), ("embedding_model", IDENTITY.model), ("embedding_dimension", str(IDENTITY.dimension))],
    )
    for n in range(2):
        connection.execute(
            "INSERT INTO documents VALUES (?, ?, ?, 'text', ?, 2, '[\"old\"]', '{}', NULL, NULL, ?)",
            (f"d{n}", f"s{n}.txt", f"s{n}.txt", f"h{n}", f"2024-01-0{n + 1}T00:00:00+00:00"),
        )
        connection.execute("INSERT INTO document_tags VALUES ('old', ?)", (f"d{n}",))
        for index in range(2):
            connection.execute(
                "INSERT INTO chunks(chunk_id, document_id, chunk_index, text, char_start, char_end, pages, embedding)"
                " VALUES (?, ?, ?, ?, 0, 5, '[]', ?)",
                (f"c{n}{index}", f"d{n}", index, f"walrus {n} {index}", vectors[n * 2 + index].tobytes()),
            )
    connection.close()


async def test_documents_from_before_collections_move_into_default(tmp_path) -> None:
    path = tmp_path / "old.db"
    vectors = unit_vectors(4, seed=7)
    make_old_store(path, vectors)

    store = SqliteStore(path)
    await store.open()
    try:
        assert await store.check_integrity() == []
        assert await store.count_chunks() == 4
        assert [(c.collection_id, c.name, c.document_count) for c in await store.list_collections()] == [
            (DEFAULT_COLLECTION, DEFAULT_COLLECTION, 2)
        ]
        document = await store.find_by_source("s1.txt")
        assert document is not None and (document.document_id, document.collection_id, document.tags) == (
            "d1",
            DEFAULT_COLLECTION,
            ["old"],
        )
        only_default = SearchFilters(collection_ids=(DEFAULT_COLLECTION,))
        hits = await store.vector_search(vectors[3], 1, only_default)
        assert [(h.chunk.document_id, h.chunk.chunk_index) for h in hits] == [("d1", 1)]
        assert len(await store.lexical_search("walrus", 10, SearchFilters(tags=("old",)))) == 4

        # the source id is now unique per collection only
        await store.create_collection(Collection("id-a", "team-a", "2024-05-01T00:00:00+00:00"))
        twin = dataclasses.replace(record("twin", "s1.txt"), collection_id="id-a")
        await store.write_document(twin, chunks_of("walrus twin"), unit_vectors(1, 1), IDENTITY)
        assert (await store.find_by_source("s1.txt")).document_id == "d1"  # type: ignore[union-attr]
        assert await store.check_integrity() == []
    finally:
        await store.close()

    reopened = SqliteStore(path)  # the migration runs once
    await reopened.open()
    try:
        assert await reopened.count_chunks() == 5 and await reopened.check_integrity() == []
    finally:
        await reopened.close()

"""`carrag reindex` on the embedded store: the configured model's vectors are built beside the live
ones in ``reindex_vectors`` (``meta.reindex_model``/``reindex_dimension`` name that model), then swapped
in by one transaction.

A run for the same model continues where the last stopped (each batch commits with its vectors); a
deleted chunk takes its new vector with it (trigger), so a reused rowid never inherits a stale one.
Searches use ``chunks.embedding`` until the swap, which checks every chunk has its new vector (else
nothing changes), copies them in, records the new model and renews ``index_epoch`` so the indexes
beside the file are rebuilt. A document written meanwhile (`write_document`) gets both models' vectors
in one transaction that re-reads which model is live.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from carrag.services.errors import EmbeddingModelMismatch
from carrag.services.models import Chunk, DocumentRecord, EmbeddingIdentity, OriginalFile
from carrag.services.stores.base import checked_vectors
from carrag.services.stores.sqlite import SqliteStore
from carrag.services.stores.sqlite_originals import put_original
from carrag.services.stores.sqlite_rows import stored_identity
from carrag.services.stores.sqlite_writes import insert_document

Vectors = tuple[EmbeddingIdentity, np.ndarray | None]  # a model and its vectors of a document's chunks (if any)


class SwappedMeanwhile(Exception):
    """The new model went live (or the store was emptied) before a document with only the old model's
    vectors could be written: embed it with the new model and write it as usual."""


@dataclass(slots=True)
class PendingChunk:
    """A chunk still waiting for its new vector, with what its embedding input needs."""

    rowid: int
    chunk_id: str  # with the rowid: the same chunk (a rowid freed by a delete can be given again)
    chunk: Chunk
    title: str | None


@dataclass(slots=True)
class ReindexCounts:
    done: int  # chunks with their new vector
    total: int  # chunks in the store


class SqliteReindex:
    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    async def begin(self, target: EmbeddingIdentity) -> ReindexCounts:
        """Make ``reindex_vectors`` belong to ``target``: kept when it already does (resume), emptied
        when it held another model's vectors."""

        def begin(connection: sqlite3.Connection) -> None:
            if stored_identity(connection, "reindex") != target:
                connection.execute("DELETE FROM reindex_vectors")
                connection.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [("reindex_model", target.model), ("reindex_dimension", str(target.dimension))],
                )

        await self.store._write(begin)
        return await self.counts()

    async def target(self) -> EmbeddingIdentity | None:
        """The model of an unfinished reindex (None: none under way)."""
        return await self.store._read(lambda connection: stored_identity(connection, "reindex"))

    async def counts(self) -> ReindexCounts:
        def counts(connection: sqlite3.Connection) -> ReindexCounts:
            done = connection.execute("SELECT count(*) FROM reindex_vectors").fetchone()[0]
            total = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
            return ReindexCounts(int(done), int(total))

        return await self.store._read(counts)

    async def pending(self, after: int, limit: int) -> list[PendingChunk]:
        """Up to ``limit`` chunks past rowid ``after`` that have no new vector yet, in rowid order."""

        def pending(connection: sqlite3.Connection) -> list[PendingChunk]:
            rows = connection.execute(
                "SELECT c.id, c.chunk_index, c.text, c.char_start, c.char_end, c.pages, c.section, d.title, c.chunk_id"
                " FROM chunks c JOIN documents d ON d.document_id = c.document_id"
                " WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM reindex_vectors r WHERE r.chunk_rowid = c.id)"
                " ORDER BY c.id LIMIT ?",
                (after, limit),
            ).fetchall()
            return [
                PendingChunk(
                    int(row[0]),
                    row[8],
                    Chunk(row[1], row[2], row[3], row[4], json.loads(row[5] or "[]"), row[6]),
                    row[7],
                )
                for row in rows
            ]

        return await self.store._read(pending)

    async def save(self, target: EmbeddingIdentity, chunks: list[PendingChunk], matrix: np.ndarray) -> None:
        """One batch of new vectors, committed together (a chunk deleted meanwhile is skipped, also
        when its rowid already went to a new chunk)."""
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.shape != (len(chunks), target.dimension):
            raise ValueError(f"expected {len(chunks)} vectors of dimension {target.dimension}, got {matrix.shape}")

        def save(connection: sqlite3.Connection) -> None:
            if stored_identity(connection, "reindex") != target:
                raise RuntimeError("the store was reset or another reindex started meanwhile")
            connection.executemany(
                "INSERT OR REPLACE INTO reindex_vectors(chunk_rowid, embedding)"
                " SELECT id, ? FROM chunks WHERE id = ? AND chunk_id = ?",
                [(matrix[i].tobytes(), chunk.rowid, chunk.chunk_id) for i, chunk in enumerate(chunks)],
            )

        await self.store._write(save)

    async def swap(self, target: EmbeddingIdentity) -> bool:
        """Put the new vectors live in one transaction; False (nothing changed) when some chunk
        still lacks its new vector."""

        def swap(connection: sqlite3.Connection) -> bool:
            if stored_identity(connection, "reindex") != target:
                raise RuntimeError("the store was reset or another reindex started meanwhile")
            missing = connection.execute(
                "SELECT 1 FROM chunks c WHERE NOT EXISTS"
                " (SELECT 1 FROM reindex_vectors r WHERE r.chunk_rowid = c.id) LIMIT 1"
            ).fetchone()
            if missing is not None:
                return False
            connection.execute(
                "UPDATE chunks SET embedding = (SELECT r.embedding FROM reindex_vectors r WHERE r.chunk_rowid = chunks.id)"
            )
            connection.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [
                    ("embedding_model", target.model),
                    ("embedding_dimension", str(target.dimension)),
                    ("index_epoch", uuid.uuid4().hex),  # the indexes beside the file rebuild from the new vectors
                ],
            )
            connection.execute("DELETE FROM meta WHERE key IN ('reindex_model', 'reindex_dimension')")
            connection.execute("DELETE FROM reindex_vectors")
            return True

        return await self.store._write(swap)

    async def write_document(
        self,
        document: DocumentRecord,
        chunks: Sequence[Chunk],
        live: Vectors,
        new: Vectors,
        original: OriginalFile | None = None,
    ) -> str | None:
        """Write a document during a model change: ``live`` (the recorded model) as its live vectors and
        ``new`` beside when a reindex towards that model is building; ``new`` live when the swap came
        first. One transaction, like `SqliteStore.write_document`."""
        chunk_list = list(chunks)
        live_identity, live_vectors = live
        new_identity, new_vectors = new
        live_matrix = None if live_vectors is None else checked_vectors(chunk_list, live_vectors, live_identity)
        new_matrix = None if new_vectors is None else checked_vectors(chunk_list, new_vectors, new_identity)
        store = self.store

        def write(connection: sqlite3.Connection) -> str | None:
            recorded = stored_identity(connection)
            if recorded is None or recorded.accepts(new_identity):
                if new_matrix is None:
                    raise SwappedMeanwhile
                replaced = insert_document(connection, document, chunk_list, new_matrix, new_identity)
            elif recorded.accepts(live_identity) and live_matrix is not None:
                replaced = insert_document(connection, document, chunk_list, live_matrix, live_identity)
                if new_matrix is not None and stored_identity(connection, "reindex") == new_identity:
                    rowids = connection.execute(
                        "SELECT id, chunk_index FROM chunks WHERE document_id = ?", (document.document_id,)
                    ).fetchall()
                    position = {chunk.chunk_index: i for i, chunk in enumerate(chunk_list)}
                    connection.executemany(
                        "INSERT OR REPLACE INTO reindex_vectors(chunk_rowid, embedding) VALUES (?, ?)",
                        [(row[0], new_matrix[position[row[1]]].tobytes()) for row in rowids],
                    )
            else:
                raise EmbeddingModelMismatch(recorded.describe(), live_identity.describe())
            if original is not None:
                put_original(connection, document.document_id, original)
            return replaced

        return await store._write(write)

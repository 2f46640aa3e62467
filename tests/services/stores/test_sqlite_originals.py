"""SQLite's kept originals read from one snapshot: a download that races a delete or a new version
still sends the bytes it started with, and a download abandoned half-way leaves nothing open."""

from __future__ import annotations

import os
from pathlib import Path

from carrag.services.models import OriginalFile
from carrag.services.stores.sqlite import ORIGINAL_PIECE_BYTES, SqliteStore
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

CONTENT = os.urandom(3 * ORIGINAL_PIECE_BYTES + 17)


async def test_a_download_racing_a_delete_sends_the_whole_snapshot(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    await store.open()
    try:
        await store.write_document(
            record("doc", "a.bin"),
            chunks_of("x"),
            unit_vectors(1, 0),
            IDENTITY,
            original=OriginalFile(CONTENT, "application/octet-stream", "a.bin"),
        )
        original = await store.get_original("doc")
        assert original is not None
        first = await anext(original.pieces)
        assert await store.delete_document("doc") is True  # committed while the download reads
        assert await store.get_original("doc") is None
        rest = [piece async for piece in original.pieces]
        assert first + b"".join(rest) == CONTENT
        assert await store.check_integrity() == []
    finally:
        await store.close()


async def test_an_abandoned_download_releases_its_snapshot(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    await store.open()
    try:
        await store.write_document(
            record("doc", "a.bin"),
            chunks_of("x"),
            unit_vectors(1, 0),
            IDENTITY,
            original=OriginalFile(CONTENT, "application/octet-stream", "a.bin"),
        )
        for _ in range(3):
            original = await store.get_original("doc")
            assert original is not None
            await anext(original.pieces)
            await original.pieces.aclose()  # type: ignore[attr-defined]
        await store.write_document(record("doc2", "a.bin"), chunks_of("y"), unit_vectors(1, 1), IDENTITY)
        checkpoint = await store._read(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
        assert checkpoint[0] == 0, "no reader holds an old snapshot: the WAL checkpoints completely"
        assert await store.get_original("doc") is None
    finally:
        await store.close()

"""The SQLite store's kept originals (KEEP_ORIGINALS): the uploaded bytes of a document, written in
the document's own transaction and deleted with it by the foreign key's cascade (replacing a version,
deleting, wiping). A download reads them in pieces from its own read transaction."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from carrag.services.errors import DependencyUnavailable
from carrag.services.models import Original, OriginalFile

ORIGINAL_PIECE_BYTES = 1024 * 1024  # a download reads the kept original this much at a time


def put_original(connection: sqlite3.Connection, document_id: str, original: OriginalFile) -> None:
    """Keep ``original`` as the document's, replacing one kept before."""
    connection.execute(
        "INSERT INTO originals(document_id, filename, content_type, size, content) VALUES (?,?,?,?,?)"
        " ON CONFLICT(document_id) DO UPDATE SET filename = excluded.filename,"
        " content_type = excluded.content_type, size = excluded.size, content = excluded.content",
        (document_id, original.filename, original.content_type, len(original.content), original.content),
    )


async def read_original(path: Path, readers: ThreadPoolExecutor, document_id: str) -> Original | None:
    """The original, read in pieces (on ``readers``) by a connection of its own inside one read
    transaction: the download sees one snapshot (WAL), even if the document is replaced or deleted
    meanwhile."""
    loop = asyncio.get_running_loop()

    def open_snapshot() -> tuple[sqlite3.Connection, sqlite3.Blob, sqlite3.Row] | None:
        connection = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("BEGIN")
            row = connection.execute(
                "SELECT rowid, filename, content_type, size FROM originals WHERE document_id = ?", (document_id,)
            ).fetchone()
            if row is None:
                connection.close()
                return None
            return connection, connection.blobopen("originals", "content", row["rowid"], readonly=True), row
        except BaseException:
            connection.close()
            raise

    try:
        opened = await loop.run_in_executor(readers, open_snapshot)
    except sqlite3.DatabaseError as exc:
        raise DependencyUnavailable("store", f"SQLite read failed: {exc}") from exc
    if opened is None:
        return None
    connection, blob, row = opened

    def close(_: object = None) -> None:
        blob.close()
        connection.close()

    async def pieces() -> AsyncIterator[bytes]:
        reading: concurrent.futures.Future[bytes] | None = None
        try:
            while True:
                reading = readers.submit(blob.read, ORIGINAL_PIECE_BYTES)
                piece = await asyncio.wrap_future(reading)
                if not piece:
                    break
                yield piece
        finally:
            # a download cancelled mid-read (the client went away) closes once that read is over
            if reading is not None and not reading.done():
                reading.add_done_callback(close)
            else:
                close()

    return Original(document_id, row["filename"], row["content_type"], row["size"], pieces())

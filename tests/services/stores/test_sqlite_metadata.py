"""A SQLite store from before user metadata gets its column on open; its documents read back with
no user metadata, and can be given some."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from carrag.services.models import SearchFilters
from carrag.services.stores.sqlite import SqliteStore
from tests.services.stores.test_store_contract import record, write


async def test_a_store_without_the_user_metadata_column_gains_it(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    await store.open()
    await write(store, record("doc", "doc.txt", metadata={"parser": "text"}), ["some brake words"])
    await store.close()
    with sqlite3.connect(path) as connection:  # as an older Carrag left it
        connection.execute("ALTER TABLE documents DROP COLUMN user_metadata")
        connection.execute("DROP TABLE document_metadata")

    store = SqliteStore(path)
    await store.open()
    try:
        stored = await store.get_document("doc")
        assert stored is not None and stored.user_metadata == {} and stored.metadata == {"parser": "text"}
        updated = await store.update_metadata("doc", user_metadata={"team": "a"})
        assert updated is not None and updated.user_metadata == {"team": "a"}
        hits = await store.lexical_search("brake", 5, SearchFilters(metadata=(("team", "a"),)))
        assert [hit.chunk.document_id for hit in hits] == ["doc"]
        assert await store.check_integrity() == []
    finally:
        await store.close()

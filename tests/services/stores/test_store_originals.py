"""Kept originals (issue 14, item 4) on every store: the bytes come back exactly, in pieces, and go
with their document (deleted, replaced, wiped), leaving nothing the integrity check would report."""

from __future__ import annotations

import os

import pytest

from carrag.services.models import OriginalFile
from carrag.services.stores.base import Store
from tests.services.stores import test_store_contract as contract
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

# the contract suite's fixtures: a fresh store of each backend
open_store = contract.open_store
store = contract.store

LARGE = os.urandom(2 * 1024 * 1024 + 12_345)  # more than one piece (SQLite) and two parts (Elasticsearch)


async def write_with_original(store: Store, document_id: str, source_id: str, original: OriginalFile | None) -> None:
    await store.write_document(
        record(document_id, source_id),
        chunks_of(f"text of {document_id}"),
        unit_vectors(1, 0),
        IDENTITY,
        original=original,
    )


async def test_original_reads_back_exactly_in_pieces(store: Store) -> None:
    await write_with_original(store, "big", "manual.pdf", OriginalFile(LARGE, "application/pdf", "manual.pdf"))
    await write_with_original(store, "plain", "notes.txt", None)

    original = await store.get_original("big")
    assert original is not None
    assert (original.document_id, original.filename, original.content_type, original.size) == (
        "big",
        "manual.pdf",
        "application/pdf",
        len(LARGE),
    )
    pieces = [piece async for piece in original.pieces]
    assert len(pieces) > 1 and b"".join(pieces) == LARGE
    assert await store.get_original("plain") is None
    assert await store.get_original("missing") is None
    assert await store.check_integrity() == []


async def test_an_empty_file_is_kept_too(store: Store) -> None:
    await write_with_original(store, "empty", "empty.txt", OriginalFile(b"", "text/plain", "empty.txt"))
    original = await store.get_original("empty")
    assert original is not None and original.size == 0 and await original.read() == b""


async def test_originals_go_with_their_document(store: Store) -> None:
    await write_with_original(store, "v1", "report.docx", OriginalFile(b"first version", "application/x-one", "r.docx"))
    await write_with_original(
        store, "v2", "report.docx", OriginalFile(b"second version", "application/x-two", "r.docx")
    )
    assert await store.get_original("v1") is None  # replaced with its version
    assert await (await store.get_original("v2")).read() == b"second version"  # type: ignore[union-attr]
    assert await store.check_integrity() == []

    assert await store.delete_document("v2") is True
    assert await store.get_original("v2") is None
    assert await store.check_integrity() == []

    await write_with_original(store, "w", "w.txt", OriginalFile(LARGE, "text/plain", "w.txt"))
    await store.wipe()
    assert await store.get_original("w") is None
    assert await store.check_integrity() == []


async def test_put_original_attaches_to_an_existing_document_only(store: Store) -> None:
    await write_with_original(store, "doc", "doc.md", None)
    assert await store.put_original("doc", b"# Title\n", "text/markdown", "doc.md") is True
    assert await (await store.get_original("doc")).read() == b"# Title\n"  # type: ignore[union-attr]
    assert await store.put_original("doc", b"# Other\n", "text/markdown", "doc.md") is True  # replaced
    assert await (await store.get_original("doc")).read() == b"# Other\n"  # type: ignore[union-attr]
    assert await store.put_original("nobody", b"x", "text/plain", "x.txt") is False
    assert await store.get_original("nobody") is None
    assert await store.check_integrity() == []


@pytest.mark.parametrize("size", [1, 1024 * 1024, 1024 * 1024 + 1])
async def test_sizes_at_piece_boundaries(store: Store, size: int) -> None:
    content = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    await write_with_original(store, "edge", "edge.bin", OriginalFile(content, "application/octet-stream", "edge.bin"))
    assert await (await store.get_original("edge")).read() == content  # type: ignore[union-attr]


async def test_deleting_a_collection_deletes_its_originals(store: Store) -> None:
    from dataclasses import replace

    from carrag.services.models import Collection

    await store.create_collection(Collection("team-id", "team", "2024-05-01T00:00:00+00:00"))
    document = replace(record("in-team", "handbook.pdf"), collection_id="team-id")
    await store.write_document(
        document,
        chunks_of("team text"),
        unit_vectors(1, 0),
        IDENTITY,
        original=OriginalFile(LARGE, "application/pdf", "h.pdf"),
    )
    await write_with_original(
        store, "outside", "handbook.pdf", OriginalFile(b"default copy", "application/pdf", "h.pdf")
    )
    assert await store.delete_collection("team-id") is True
    assert await store.get_original("in-team") is None
    assert await (await store.get_original("outside")).read() == b"default copy"  # type: ignore[union-attr]
    assert await store.check_integrity() == []

"""Elasticsearch-specific guarantees, on the session's real node. The behaviour shared with every
store is in test_store_contract.py."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from elasticsearch import AsyncElasticsearch

import carrag.services.stores.elasticsearch.mapping as es_mapping
import carrag.services.stores.elasticsearch.queries as es_queries
from carrag.services.errors import DependencyUnavailable, UpstreamError
from carrag.services.ids import chunk_id
from carrag.services.models import Chunk, SearchFilters
from carrag.services.stores.elasticsearch import ElasticsearchStore
from carrag.services.stores.elasticsearch.queries import glob_to_regexp
from carrag.services.stores.elasticsearch.versions import PendingWrite
from tests.conftest import ES_TEST_REFRESH_INTERVAL, drop_es_index, es_index_name
from tests.live_server import free_port
from tests.services.stores.test_store_contract import IDENTITY, chunks_of, record, unit_vectors

# every document but the epoch (`versions.py`), which a sweep or a replace writes
NOT_EPOCH = {"bool": {"must_not": {"term": {"doc_kind": "epoch"}}}}


@pytest.fixture
async def raw(es_url: str) -> AsyncIterator[AsyncElasticsearch]:
    client = AsyncElasticsearch(es_url)
    yield client
    await client.close()


@pytest.fixture
async def es_store(es_url: str, raw: AsyncElasticsearch) -> AsyncIterator[ElasticsearchStore]:
    store = ElasticsearchStore(es_url, index=es_index_name(), refresh_interval=ES_TEST_REFRESH_INTERVAL)
    await store.open()
    yield store
    await drop_es_index(raw, store.index)
    await store.close()


# --- pure: the glob translation against SQLite's own GLOB ------------------------------------------
GLOB_PATTERNS = [
    "*.md",
    "docs/*",
    "docs/?otes.md",
    "[mr]*",
    "[^mr]*",
    "[a-c]x",
    "[]x]*",
    "[a-]",
    "a.b",
    "a+b*",
    "(v1)*",
    "x\\y",
    "*[0-9][0-9].txt",
    "[!a]*",
    "é*",
    "*",
    "?",
    "",
    "a[b",
    "{a}|b",
    '#@&<>~"',
    "D*",
]
GLOB_SUBJECTS = [
    "notes.md",
    "docs/notes.md",
    "docs/votes.md",
    "readme.md",
    "manual.pdf",
    "bx",
    "dx",
    "]z",
    "x",
    "-",
    "a",
    "a.b",
    "axb",
    "a+bc",
    "aab",
    "(v1).txt",
    "x\\y",
    "report 12.txt",
    "!z",
    "éa",
    "",
    "a[b",
    "{a}|b",
    '#@&<>~"',
    "D",
    "d",
]


def test_glob_translation_agrees_with_sqlite_glob() -> None:
    connection = sqlite3.connect(":memory:")
    for pattern in GLOB_PATTERNS:
        expression = glob_to_regexp(pattern)
        for subject in GLOB_SUBJECTS:
            expected = bool(connection.execute("SELECT ? GLOB ?", (subject, pattern)).fetchone()[0])
            # the translation uses only syntax Lucene and Python's re read alike (escapes, ., .*, [...])
            actual = expression is not None and re.fullmatch(expression, subject, re.DOTALL) is not None
            assert actual == expected, (pattern, subject, expression)


async def test_malformed_url_is_reported_as_unavailable() -> None:
    store = ElasticsearchStore("localhost:9200")
    with pytest.raises(DependencyUnavailable, match="ELASTICSEARCH_URL"):
        await store.open()
    assert (await store.health()).status == "unavailable"


async def test_unreachable_node_gives_clear_503_errors() -> None:
    port = free_port()
    store = ElasticsearchStore(f"http://elastic:secret@127.0.0.1:{port}", index="carrag_chunks", timeout=5)
    expected = rf"Elasticsearch at http://127.0.0.1:{port} is unreachable"
    with pytest.raises(DependencyUnavailable, match=expected) as raised:
        await store.open()
    assert "secret" not in raised.value.message
    calls = [
        lambda: store.count_chunks(),
        lambda: store.lexical_search("oil", 5, SearchFilters()),
        lambda: store.vector_search(unit_vectors(1, 0)[0], 5, SearchFilters()),
        lambda: store.embedding_identity(),
        lambda: store.list_documents(offset=0, limit=5),
        lambda: store.get_windows([("a", 0)], 1),
        lambda: store.delete_document("x"),
        lambda: store.write_document(record("a", "a.txt"), chunks_of("x"), unit_vectors(1, 0), IDENTITY),
        lambda: store.wipe(),
    ]
    for call in calls:
        with pytest.raises(DependencyUnavailable, match="unreachable"):
            await call()
    health = await store.health()
    assert health.status == "unavailable" and "unreachable" in (health.detail or "")
    await store.close()


# --- on the real node ----------------------------------------------------------------------------
def _only(response: dict) -> dict:
    """The one concrete index's entry of an answer addressed to the alias."""
    assert len(response) == 1, response
    return next(iter(response.values()))


@pytest.mark.elasticsearch
async def test_index_mapping_settings_and_alias(es_store: ElasticsearchStore, raw: AsyncElasticsearch) -> None:
    await es_store.write_document(record("a", "a.txt"), chunks_of("x"), unit_vectors(1, 0), IDENTITY)
    aliases = await raw.indices.get_alias(name=es_store.index)
    assert list(aliases) == [f"{es_store.index}-000001"], "the name is an alias over generation 1"
    mapping = _only(await raw.indices.get_mapping(index=es_store.index))["mappings"]
    properties = mapping["properties"]
    assert properties["content"] == {"type": "text", "analyzer": "english"}
    assert properties["embedding"] == {
        "type": "dense_vector",
        "dims": IDENTITY.dimension,
        "index": True,
        "similarity": "cosine",
        "index_options": es_mapping.HNSW_OPTIONS,
    }
    assert properties["tags"]["fields"]["keyword"]["type"] == "keyword"
    assert properties["document_id"]["type"] == properties["source_id"]["type"] == "keyword"
    assert properties["metadata"] == {"type": "object", "enabled": False}
    assert properties["created_at"]["type"] == "date_nanos"
    assert mapping["dynamic"] == "strict"
    assert mapping["_meta"]["embedding_model"] == IDENTITY.model
    settings = _only(await raw.indices.get_settings(index=es_store.index))["settings"]["index"]
    assert (settings["number_of_shards"], settings["refresh_interval"]) == ("1", ES_TEST_REFRESH_INTERVAL)
    tokens = await raw.indices.analyze(index=es_store.index, field="content", text="Replacing the filters")
    assert [t["token"] for t in tokens["tokens"]] == ["replac", "filter"]


@pytest.mark.elasticsearch
async def test_shards_and_replicas_come_from_the_settings(es_url: str, raw: AsyncElasticsearch) -> None:
    store = ElasticsearchStore(es_url, index=es_index_name(), shards=3, replicas=0, refresh_interval="2s")
    await store.open()
    await store.write_document(record("a", "a.txt", chunks=3), chunks_of("x", "y", "z"), unit_vectors(3, 0), IDENTITY)
    settings = _only(await raw.indices.get_settings(index=store.index))["settings"]["index"]
    assert (settings["number_of_shards"], settings["refresh_interval"]) == ("3", "2s")
    # wait_for: the write returned only once a (scheduled) refresh had made it searchable
    assert len(await store.lexical_search("x y z", 5, SearchFilters())) == 3
    await drop_es_index(raw, store.index)
    await store.close()


@pytest.mark.elasticsearch
async def test_a_version_no_source_record_names_is_invisible(es_store: ElasticsearchStore, raw) -> None:
    """The premise of atomic visibility: chunks are shown only while their source's record names them."""
    await es_store.write_document(record("a", "a.txt"), chunks_of("visible"), unit_vectors(1, 0), IDENTITY)
    pending = {"doc_kind": "chunk", "document_id": "x", "source_id": "a.txt", "content": "hidden", "chunk_index": 0}
    await raw.index(index=es_store.index, id="sneaky", document=pending, refresh=True)
    assert await es_store.count_chunks() == 1
    assert await es_store.lexical_search("hidden", 5, SearchFilters()) == []
    assert await es_store.get_chunks("x") == []


@pytest.mark.elasticsearch
async def test_a_rejected_chunk_fails_the_write_and_leaves_the_old_version(es_store: ElasticsearchStore, raw) -> None:
    old = record("old", "report.txt", chunks=2)
    await es_store.write_document(old, chunks_of("old walrus", "old walrus again"), unit_vectors(2, 0), IDENTITY)
    new_chunks = [Chunk(i, f"new pelican {i}", i * 20, i * 20 + 12) for i in range(30)]
    new_chunks[17].chunk_index = 2**31  # outside the integer field: Elasticsearch rejects this one item
    with pytest.raises(UpstreamError, match=r"failed 1 of 31 .*nothing of the document was stored"):
        await es_store.write_document(record("new", "report.txt", chunks=30), new_chunks, unit_vectors(30, 1), IDENTITY)

    assert (await es_store.find_by_source("report.txt")).document_id == "old"
    assert await es_store.count_chunks() == 2
    assert await es_store.lexical_search("pelican", 50, SearchFilters()) == []
    assert len(await es_store.lexical_search("walrus", 5, SearchFilters())) == 2
    await raw.indices.refresh(index=es_store.index)  # the rolled-back items are deleted, not just hidden
    assert (await raw.count(index=es_store.index, query=NOT_EPOCH))[
        "count"
    ] == 4  # two chunks, the version and the source record
    assert await es_store.check_integrity() == []


@pytest.mark.elasticsearch
async def test_integrity_check_finds_what_a_crash_could_leave(es_store: ElasticsearchStore, raw) -> None:
    await es_store.write_document(
        record("a", "a.txt", chunks=3), chunks_of("x", "y", "z"), unit_vectors(3, 0), IDENTITY
    )
    assert await es_store.check_integrity() == []
    chunk = {
        "doc_kind": "chunk",
        "document_id": "orphan",
        "content": "left behind",
        "chunk_index": 0,
        "source_id": "o.txt",
        "filename": "o.txt",
        "char_start": 0,
        "char_end": 11,
    }
    await raw.index(index=es_store.index, id="orphan-0", document=chunk)
    await raw.delete(index=es_store.index, id=chunk_id("a", 1))
    assert sorted(await es_store.check_integrity()) == [
        "1 chunks belong to no document",
        "1 chunks lack a vector",
        "document a declares 3 chunks but has 2",
    ]


@pytest.mark.elasticsearch
async def test_the_sweep_removes_abandoned_versions_and_keeps_live_ones(es_store: ElasticsearchStore, raw) -> None:
    """A writer that died after writing its chunks (step 1) never flipped the record: its version stays
    invisible, and the sweep removes it once it is older than ELASTICSEARCH_ABANDONED_AFTER_SECONDS."""
    await es_store.write_document(
        record("live", "s.txt", chunks=2), chunks_of("kept", "kept"), unit_vectors(2, 0), IDENTITY
    )
    dead = PendingWrite(record("dead", "s.txt", chunks=2), chunks_of("lost", "lost"), unit_vectors(2, 1), IDENTITY)
    outcomes: list = [None]
    assert await es_store.versions._write_versions([dead], outcomes) == [0]  # step 1 only: the crash
    assert await es_store.lexical_search("lost", 5, SearchFilters()) == []
    assert await es_store.sweep() == 0, "too young: its writer may still publish it"
    assert await es_store.sweep(older_than=0) == 1
    assert await es_store.check_integrity() == []
    assert (await raw.count(index=es_store.index, query=NOT_EPOCH))[
        "count"
    ] == 4  # the live version: 2 chunks, 2 records
    assert [h.chunk.document_id for h in await es_store.lexical_search("kept", 5, SearchFilters())] == ["live", "live"]


@pytest.mark.elasticsearch
async def test_a_write_never_flips_after_half_the_abandon_time(es_store: ElasticsearchStore, monkeypatch) -> None:
    await es_store.write_document(record("v1", "s.txt"), chunks_of("first"), unit_vectors(1, 0), IDENTITY)
    es_store.versions.abandoned_after = 0.0  # every flip is already too late
    with pytest.raises(DependencyUnavailable, match="nothing was stored"):
        await es_store.write_document(record("v2", "s.txt"), chunks_of("second"), unit_vectors(1, 1), IDENTITY)
    assert (await es_store.find_by_source("s.txt")).document_id == "v1"
    assert await es_store.check_integrity() == []


@pytest.mark.elasticsearch
async def test_concurrent_writes_share_bulk_requests(es_store: ElasticsearchStore, monkeypatch) -> None:
    calls: list[int] = []
    original = es_store.connection.bulk

    async def counting(operations, **kwargs):
        calls.append(len(operations))
        return await original(operations, **kwargs)

    monkeypatch.setattr(es_store.connection, "bulk", counting)
    await asyncio.gather(
        *(
            es_store.write_document(
                record(f"d{n}", f"s{n}.txt", chunks=2), chunks_of("a", "b"), unit_vectors(2, n), IDENTITY
            )
            for n in range(40)
        )
    )
    assert await es_store.count_chunks() == 80
    assert len(calls) <= 12, f"40 concurrent documents took {len(calls)} bulk requests"


@pytest.mark.elasticsearch
async def test_store_recovers_when_elasticsearch_comes_back(es_url: str, raw: AsyncElasticsearch) -> None:
    port = free_port()
    store = ElasticsearchStore(
        f"http://127.0.0.1:{port}", index=es_index_name(), timeout=5, refresh_interval=ES_TEST_REFRESH_INTERVAL
    )
    with pytest.raises(DependencyUnavailable):
        await store.open()
    assert (await store.health()).status == "unavailable"
    target = urlsplit(es_url)
    async with _tcp_forwarder(port, target.hostname, target.port):
        # no restart, no reopen: the next call sets the index up
        assert await store.count_chunks() == 0
        await store.write_document(record("a", "a.txt"), chunks_of("recovered words"), unit_vectors(1, 0), IDENTITY)
        assert len(await store.lexical_search("recovered", 5, SearchFilters())) == 1
        assert (await store.health()).status == "ok"
    await drop_es_index(raw, store.index)
    await store.close()


@pytest.mark.elasticsearch
async def test_an_index_deleted_underneath_reads_as_empty_then_comes_back(es_store: ElasticsearchStore, raw) -> None:
    await es_store.write_document(record("a", "a.txt"), chunks_of("first words"), unit_vectors(1, 0), IDENTITY)
    await drop_es_index(raw, es_store.index)
    with pytest.raises(DependencyUnavailable, match="deleted by someone else"):
        # the alias is gone: the bulk must fail (require_alias), not create a plain index by that name
        await es_store.write_document(record("b", "b.txt"), chunks_of("second words"), unit_vectors(1, 1), IDENTITY)
    assert not await raw.indices.exists(index=es_store.index)
    assert await asyncio.wait_for(es_store.delete_document("a"), 10) is False
    assert await es_store.count_chunks() == 0
    assert await es_store.lexical_search("words", 5, SearchFilters()) == []
    assert await es_store.embedding_identity() is None
    await es_store.write_document(record("b", "b.txt"), chunks_of("second words"), unit_vectors(1, 1), IDENTITY)
    assert [h.chunk.document_id for h in await es_store.lexical_search("words", 5, SearchFilters())] == ["b"]
    mapping = _only(await raw.indices.get_mapping(index=es_store.index))["mappings"]
    assert mapping["dynamic"] == "strict", "recreated by the store, with its mapping"


@pytest.mark.elasticsearch
async def test_an_existing_index_is_adopted_or_refused_clearly(es_url: str, raw: AsyncElasticsearch) -> None:
    name = es_index_name()
    await raw.indices.create(
        index=f"{name}-000001", settings={"number_of_shards": 1, "refresh_interval": "-1"}, aliases={name: {}}
    )
    store = ElasticsearchStore(es_url, index=name)
    await store.open()
    settings = _only(await raw.indices.get_settings(index=name))["settings"]["index"]
    assert settings["refresh_interval"] == "1s", "writes wait for refreshes, so refreshes must happen"
    await store.close()

    plain = es_index_name()
    await raw.indices.create(index=plain)
    store = ElasticsearchStore(es_url, index=plain)
    with pytest.raises(DependencyUnavailable, match=f"index {plain} is a plain index, not an alias.*carrag reindex"):
        await store.open()
    await store.close()

    foreign = es_index_name()
    await raw.indices.create(
        index=f"{foreign}-000001", mappings={"properties": {"content": {"type": "keyword"}}}, aliases={foreign: {}}
    )
    store = ElasticsearchStore(es_url, index=foreign)
    with pytest.raises(DependencyUnavailable, match=f"index {foreign}-000001 exists with a mapping Carrag cannot use"):
        await store.open()
    await store.close()
    await raw.indices.delete(
        index=f"{name}-000001,{name}-originals,{plain},{foreign}-000001,{foreign}-originals", ignore_unavailable=True
    )


@pytest.mark.elasticsearch
async def test_pages_beyond_the_result_window(es_store: ElasticsearchStore, monkeypatch) -> None:
    await asyncio.gather(
        *(
            es_store.write_document(
                record(f"d{n}", f"s{n}.txt", tags=["t"], minutes=n),
                chunks_of(f"text {n}"),
                unit_vectors(1, n),
                IDENTITY,
            )
            for n in range(9)
        )
    )
    chunks = [Chunk(i, f"part {i}", i * 10, i * 10 + 6) for i in range(8)]
    await es_store.write_document(record("big", "big.txt", chunks=8, minutes=99), chunks, unit_vectors(8, 1), IDENTITY)
    expected_documents = [d.document_id for d in (await es_store.list_documents(offset=0, limit=20)).items]
    monkeypatch.setattr(es_queries, "MAX_RESULT_WINDOW", 3)  # force the search_after path
    for offset, limit in [(0, 5), (2, 4), (6, 3), (9, 2), (12, 5)]:
        page = await es_store.list_documents(offset=offset, limit=limit)
        assert [d.document_id for d in page.items] == expected_documents[offset : offset + limit]
        assert page.total == 10
    listed = await es_store.get_chunks("big", offset=2, limit=5)
    assert [item.chunk.chunk_index for item in listed] == [2, 3, 4, 5, 6]
    assert len(await es_store.list_sources()) == 10
    assert await es_store.delete_document("big") is True
    assert await es_store.count_chunks() == 9


@pytest.mark.elasticsearch
async def test_an_unusable_index_name_is_a_clear_503(es_url: str) -> None:
    store = ElasticsearchStore(es_url, index="Carrag_Chunks")
    with pytest.raises(DependencyUnavailable, match="setting up the index Carrag_Chunks.*invalid_index_name"):
        await store.open()
    await store.close()


# --- helpers -------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _tcp_forwarder(port: int, host: str, target_port: int) -> AsyncIterator[None]:
    """Listen on 127.0.0.1:``port`` and pipe every connection to ``host:target_port``."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, target_port)
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))

    server = await asyncio.start_server(handle, "127.0.0.1", port, reuse_address=True)
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()

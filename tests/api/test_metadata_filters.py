"""User metadata (ingest, PATCH) and the metadata filters of /search, /query and /query/stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from carrag.services.container import Container

BRAKES = "Brake pads wear with use; check the brake pad thickness every season. " * 20


async def ingest(client: httpx.AsyncClient, name: str, text: str = BRAKES, **data: str) -> dict:
    response = await client.post("/ingest/file", files={"file": (name, text.encode())}, data=data)
    assert response.status_code == 200, response.text
    return response.json()


async def found(client: httpx.AsyncClient, path: str = "/search", **filters: object) -> set[str]:
    response = await client.post(path, json={"question": "brake pad thickness", "top_k": 20, **filters})
    assert response.status_code == 200, response.text
    body = response.json()
    return {hit["filename"] for hit in body.get("results", body.get("sources", []))}


async def test_ingest_metadata_patch_replaces_it_without_re_embedding(
    client: httpx.AsyncClient, container: Container, monkeypatch
) -> None:
    document = await ingest(client, "brakes.md", metadata=json.dumps({"team": "a", "year": 2024, "public": True}))
    await ingest(client, "other.txt", "Other: " + BRAKES, metadata='{"team": "b"}')
    path = f"/documents/{document['document_id']}"
    stored = (await client.get(path)).json()
    assert stored["metadata"] == {"team": "a", "year": 2024, "public": True}
    system = stored["system_metadata"]
    assert system["markup"] == "markdown" and "chunking" in system
    assert await found(client, metadata={"team": "a"}) == {"brakes.md"}
    assert await found(client, metadata={"year": "2024", "public": True}) == {"brakes.md"}

    async def no_embedding(*args, **kwargs):
        raise AssertionError("a metadata change must not re-embed")

    monkeypatch.setattr(container.embedder, "embed_documents", no_embedding)
    monkeypatch.setattr(container.embedder, "embed_query", no_embedding)
    patched = await client.patch(path, json={"metadata": {"team": "c", "reviewed": 1.5}})
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["document_id"] == document["document_id"]
    assert body["metadata"] == {"team": "c", "reviewed": 1.5}
    assert body["system_metadata"] == system, "a PATCH never touches the system metadata"
    assert (await client.get(path)).json()["metadata"] == {"team": "c", "reviewed": 1.5}
    monkeypatch.undo()
    assert await found(client, metadata={"team": "a"}) == set()
    assert await found(client, metadata={"team": "c"}) == {"brakes.md"}
    cleared = await client.patch(path, json={"metadata": {}})
    assert cleared.json()["metadata"] == {} and cleared.json()["system_metadata"] == system


async def test_reupload_with_new_metadata_updates_it_in_place(client: httpx.AsyncClient) -> None:
    first = await ingest(client, "brakes.txt", metadata='{"team": "a"}')
    same = await ingest(client, "brakes.txt", metadata='{"team": "a"}')
    assert same["status"] == "unchanged"
    more = await ingest(client, "brakes.txt", metadata='{"stage": "final"}')
    assert (more["status"], more["document_id"]) == ("updated", first["document_id"])
    stored = (await client.get(f"/documents/{first['document_id']}")).json()
    assert stored["metadata"] == {"team": "a", "stage": "final"}


@pytest.mark.parametrize(
    "metadata",
    [
        '{"team": {"nested": 1}}',
        '{"tags": [1, 2]}',
        '["not", "an", "object"]',
        "{not json",
        '{"bad key": "x"}',
        '{"k=v": "x"}',
        '{"none": null}',
    ],
)
async def test_bad_ingest_metadata_is_422(client: httpx.AsyncClient, metadata: str) -> None:
    response = await client.post(
        "/ingest/file", files={"file": ("a.txt", BRAKES.encode())}, data={"metadata": metadata}
    )
    assert response.status_code == 422, response.text
    assert (await client.get("/documents")).json()["total"] == 0
    if metadata != "{not json":
        body = {"url": "https://example.com/", "metadata": json.loads(metadata)}
        assert (await client.post("/ingest/url", json=body)).status_code == 422


async def test_patch_with_bad_metadata_is_422(client: httpx.AsyncClient) -> None:
    document = await ingest(client, "a.txt")
    path = f"/documents/{document['document_id']}"
    for body in ({"metadata": {"a": {"b": 1}}}, {"metadata": ["x"]}, {"metadata": {"": "x"}}, {"metadata": None}):
        assert (await client.patch(path, json=body)).status_code == 422, body


async def test_every_filter_on_search_query_and_stream(client: httpx.AsyncClient) -> None:
    before = datetime.now(UTC)
    await ingest(client, "guide.md", tags="team-a,brakes", metadata='{"team": "a"}')
    await ingest(client, "notes.txt", "Notes: " + BRAKES, tags="team-b", metadata='{"team": "b"}')
    await ingest(
        client, "sheet.csv", "part,note\npad,check the brake pad thickness every season\n" * 10, tags="teamwork"
    )
    after = datetime.now(UTC) + timedelta(seconds=1)
    cases: list[tuple[dict, set[str]]] = [
        ({}, {"guide.md", "notes.txt", "sheet.csv"}),
        ({"tag_prefix": "team-"}, {"guide.md", "notes.txt"}),
        ({"tag_prefix": ["TEAM-B", "teamw"]}, {"notes.txt", "sheet.csv"}),
        ({"metadata": {"team": "b"}}, {"notes.txt"}),
        ({"source_type": "csv"}, {"sheet.csv"}),
        ({"source_type": ["TEXT", "pdf"]}, {"guide.md", "notes.txt"}),
        ({"created_after": before.isoformat()}, {"guide.md", "notes.txt", "sheet.csv"}),
        ({"created_after": after.isoformat()}, set()),
        ({"created_before": before.isoformat()}, set()),
        ({"created_before": after.strftime("%Y-%m-%dT%H:%M:%S")}, {"guide.md", "notes.txt", "sheet.csv"}),  # naive: UTC
        ({"filename": "*.md"}, {"guide.md"}),
        ({"filename": "[ns]*"}, {"notes.txt", "sheet.csv"}),
        ({"filename": "*.txt", "tag_prefix": "team", "metadata": {"team": "b"}}, {"notes.txt"}),
    ]
    for filters, expected in cases:
        assert await found(client, **filters) == expected, filters
        for mode in ("bm25", "knn"):
            assert await found(client, mode=mode, **filters) == expected, (mode, filters)
    for filters, expected in cases[1:5]:
        assert await found(client, "/query", **filters) <= expected, filters
        assert await found(client, "/query", **filters), filters
    stream = await client.post(
        "/query/stream", json={"question": "brake pad thickness", "top_k": 20, "metadata": {"team": "b"}}
    )
    sources = next(
        json.loads(line.removeprefix("data: "))
        for block in stream.text.split("\r\n\r\n")
        if block.startswith("event: sources")
        for line in block.splitlines()
        if line.startswith("data: ")
    )
    assert {source["filename"] for source in sources} == {"notes.txt"}


@pytest.mark.parametrize("path", ["/search", "/query", "/query/stream"])
@pytest.mark.parametrize(
    "filters",
    [
        {"created_after": "last tuesday"},
        {"created_before": "2024-13-45"},
        {"metadata": {"team": ["a"]}},
        {"metadata": "team=a"},
        {"source_type": [""]},
        {"tag_prefix": 5},
    ],
)
async def test_bad_filters_are_422(client: httpx.AsyncClient, path: str, filters: dict) -> None:
    response = await client.post(path, json={"question": "brakes", **filters})
    assert response.status_code == 422, (filters, response.text)


async def test_delete_by_source_id(client: httpx.AsyncClient) -> None:
    kept = await ingest(client, "kept.txt")
    doomed = await ingest(client, "doomed.txt", "Wiper blades streak when worn out. " * 20, source_id="docs/doomed")
    response = await client.delete("/documents", params={"source_id": "docs/doomed"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["source_id"], body["deleted"]) == ("docs/doomed", 1)
    assert [d["document_id"] for d in body["documents"]] == [doomed["document_id"]]
    assert body["documents"][0]["filename"] == "doomed.txt"
    assert (await client.get(f"/documents/{doomed['document_id']}")).status_code == 404
    assert (await client.get(f"/documents/{kept['document_id']}")).status_code == 200
    again = await client.delete("/documents", params={"source_id": "docs/doomed"})
    assert again.status_code == 404 and "docs/doomed" in again.json()["detail"]
    assert (await client.delete("/documents", params={"source_id": "docs/*"})).status_code == 404, "exact, no glob"
    assert (await client.delete("/documents")).status_code == 422


async def test_delete_by_source_id_is_scoped_to_collections(client: httpx.AsyncClient) -> None:
    assert (await client.post("/collections", json={"name": "team-a"})).status_code == 201
    in_default = await ingest(client, "shared.txt")
    in_team = await ingest(client, "shared.txt", collection="team-a")
    assert in_default["document_id"] != in_team["document_id"]
    response = await client.delete("/documents", params={"source_id": "shared.txt", "collection": "team-a"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert [d["document_id"] for d in body["documents"]] == [in_team["document_id"]]
    assert body["documents"][0]["collection"] == "team-a"
    assert (await client.get(f"/documents/{in_default['document_id']}")).status_code == 200
    unknown = await client.delete("/documents", params={"source_id": "shared.txt", "collection": "nope"})
    assert unknown.status_code == 404
    assert (await client.delete("/documents", params={"source_id": "shared.txt"})).json()["deleted"] == 1

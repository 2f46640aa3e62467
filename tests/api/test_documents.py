from __future__ import annotations

import sqlite3

import httpx

from carrag.services.container import Container


async def ingest(client: httpx.AsyncClient, name: str, text: str, tags: str = "") -> dict:
    response = await client.post("/ingest/file", files={"file": (name, text.encode())}, data={"tags": tags})
    assert response.status_code == 200, response.text
    return response.json()


async def test_list_page_filter_inspect_delete(client: httpx.AsyncClient, container: Container) -> None:
    a = await ingest(client, "a.txt", "Alpha document about brakes. " * 40, "shared,alpha")
    b = await ingest(client, "b.txt", "Beta document about tires. " * 40, "shared")
    await ingest(client, "c.txt", "Gamma document about wipers. " * 40)

    listing = (await client.get("/documents", params={"limit": 2})).json()
    assert listing["total"] == 3 and len(listing["items"]) == 2
    second_page = (await client.get("/documents", params={"limit": 2, "offset": 2})).json()
    assert len(second_page["items"]) == 1
    ids = {d["document_id"] for d in listing["items"] + second_page["items"]}
    assert len(ids) == 3

    shared = (await client.get("/documents", params={"tag": "Shared"})).json()
    assert {d["document_id"] for d in shared["items"]} == {a["document_id"], b["document_id"]}

    detail = (await client.get(f"/documents/{a['document_id']}")).json()
    assert detail["chunk_count"] == a["chunk_count"] and detail["system_metadata"]["line_count"] == 1
    assert detail["source_type"] == "text" and len(detail["content_hash"]) == 64

    response = await client.delete(f"/documents/{a['document_id']}")
    assert response.status_code == 200 and response.json()["deleted"] is True
    assert (await client.get(f"/documents/{a['document_id']}")).status_code == 404
    assert (await client.delete(f"/documents/{a['document_id']}")).status_code == 404

    connection = sqlite3.connect(container.settings.resolved_sqlite_path)
    leftovers = connection.execute("SELECT count(*) FROM chunks WHERE document_id = ?", (a["document_id"],)).fetchone()[
        0
    ]
    lexical = connection.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'alpha'").fetchone()[0]
    connection.close()
    assert leftovers == 0 and lexical == 0
    search = (await client.post("/search", json={"question": "alpha brakes", "top_k": 10})).json()
    assert a["document_id"] not in {r["document_id"] for r in search["results"]}, "no vector or text hit survives"


async def test_unknown_document_is_404(client: httpx.AsyncClient) -> None:
    for path in ("/documents/nope", "/documents/nope/chunks"):
        response = await client.get(path)
        assert response.status_code == 404 and "nope" in response.json()["detail"]


async def test_bad_paging_is_422(client: httpx.AsyncClient) -> None:
    assert (await client.get("/documents", params={"limit": 0})).status_code == 422
    assert (await client.get("/documents", params={"offset": -1})).status_code == 422


async def test_patch_changes_tags_and_title_without_re_embedding(
    client: httpx.AsyncClient, container: Container, monkeypatch
) -> None:
    document = await ingest(client, "manual.txt", "Snowmobile belt tension and carburetor care. " * 40, "old")

    async def no_embedding(*args, **kwargs):
        raise AssertionError("a metadata change must not re-embed")

    monkeypatch.setattr(container.embedder, "embed_documents", no_embedding)
    document_id = document["document_id"]
    response = await client.patch(
        f"/documents/{document_id}", json={"tags": [" Winter ", "winter", "Manuals"], "title": "Sled manual"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["document_id"], body["tags"], body["title"]) == (document_id, ["winter", "manuals"], "Sled manual")
    assert (await client.get(f"/documents/{document_id}")).json()["tags"] == ["winter", "manuals"]
    chunks = (await client.get(f"/documents/{document_id}/chunks")).json()
    assert chunks["total"] == document["chunk_count"]
    listed = (await client.get("/documents", params={"tag": "winter"})).json()
    assert [d["document_id"] for d in listed["items"]] == [document_id]
    assert (await client.get("/documents", params={"tag": "old"})).json()["total"] == 0

    title_only = await client.patch(f"/documents/{document_id}", json={"title": "Sled handbook"})
    assert title_only.json()["tags"] == ["winter", "manuals"] and title_only.json()["title"] == "Sled handbook"


async def test_patch_unknown_document_is_404_and_bad_bodies_are_422(client: httpx.AsyncClient) -> None:
    missing = await client.patch("/documents/nope", json={"tags": ["x"]})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    document = await ingest(client, "a.txt", "Some words about brakes. " * 20)
    path = f"/documents/{document['document_id']}"
    for body in ({}, {"tags": "not-a-list"}, {"title": "   "}, {"title": ""}, {"tags": [f"x{n}" for n in range(51)]}):
        assert (await client.patch(path, json=body)).status_code == 422, body


async def test_ref_resolves_an_id_prefix_source_id_or_file_name(client: httpx.AsyncClient) -> None:
    first = await ingest(client, "brakes.txt", "Bleed the brakes every two years. " * 20)
    response = await client.post(
        "/ingest/file",
        files={"file": ("brakes.txt", b"Brake pads wear out after 50,000 km. " * 20)},
        data={"source_id": "garage/brakes.txt"},
    )
    second = response.json()

    async def resolved(ref: str) -> list[str]:
        answer = await client.get("/documents", params={"ref": ref})
        assert answer.status_code == 200, answer.text
        return [d["document_id"] for d in answer.json()["items"]]

    assert await resolved(first["document_id"][:8]) == [first["document_id"]]
    assert await resolved(second["document_id"]) == [second["document_id"]]
    assert await resolved("brakes.txt") == [first["document_id"]], "an exact source id wins over a file name"
    assert await resolved("garage/brakes.txt") == [second["document_id"]]
    assert await resolved("nothing.txt") == []
    assert (await client.get("/documents", params={"ref": ""})).status_code == 422

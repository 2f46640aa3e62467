"""The collection API and the collection fields of ingest, search, query, documents and /v1."""

from __future__ import annotations

import json

import httpx

from carrag.services.container import Container

MANUAL = "The hydraulic pump of the excavator needs new seals every 500 hours. " * 20
OTHER = "The espresso machine descales itself once a month with citric acid. " * 20


async def ingest(client: httpx.AsyncClient, name: str, text: str, collection: str | None = None) -> httpx.Response:
    data = {"collection": collection} if collection is not None else {}
    return await client.post("/ingest/file", files={"file": (name, text.encode())}, data=data)


async def create_list_rename_delete(client: httpx.AsyncClient) -> None:
    created = await client.post("/collections", json={"name": "team-a"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["name"], body["document_count"]) == ("team-a", 0) and body["collection_id"] != "team-a"

    assert (await client.post("/collections", json={"name": "team-a"})).status_code == 409
    assert (await client.post("/collections", json={"name": "default"})).status_code == 409
    for bad in ("Team", "", "a b", "x" * 65, "-x"):
        assert (await client.post("/collections", json={"name": bad})).status_code == 422, bad

    listing = (await client.get("/collections")).json()["items"]
    assert [(c["name"], c["document_count"]) for c in listing] == [("default", 0), ("team-a", 0)]

    renamed = await client.patch("/collections/team-a", json={"name": "team-b"})
    assert renamed.status_code == 200 and renamed.json()["collection_id"] == body["collection_id"]
    assert (await client.get("/collections/team-a")).status_code == 404
    assert (await client.get("/collections/team-b")).json()["name"] == "team-b"
    assert (await client.patch("/collections/default", json={"name": "x"})).status_code == 409
    assert (await client.patch("/collections/nope", json={"name": "x"})).status_code == 404
    assert (await client.delete("/collections/default")).status_code == 409

    deleted = await client.delete("/collections/team-b")
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    missing = await client.delete("/collections/team-b")
    assert missing.status_code == 404 and missing.json()["detail"] == "collection 'team-b' does not exist"


async def documents_live_in_their_collection(client: httpx.AsyncClient, container: Container) -> None:
    await client.post("/collections", json={"name": "machines"})
    in_machines = await ingest(client, "manual.txt", MANUAL, "machines")
    assert in_machines.status_code == 200, in_machines.text
    assert in_machines.json()["collection"] == "machines"
    in_default = (await ingest(client, "manual.txt", MANUAL)).json()
    assert in_default["status"] == "ingested" and in_default["collection"] == "default", "same file, other collection"
    await ingest(client, "coffee.txt", OTHER)

    unknown = await ingest(client, "x.txt", OTHER, "nope")
    assert unknown.status_code == 404 and "collection 'nope' does not exist" in unknown.json()["detail"]
    url_unknown = await client.post("/ingest/url", json={"url": "https://example.com/x", "collection": "nope"})
    assert url_unknown.status_code == 404

    machines = (await client.get("/documents", params={"collection": "machines"})).json()
    assert [(d["document_id"], d["collection"]) for d in machines["items"]] == [
        (in_machines.json()["document_id"], "machines")
    ]
    assert (await client.get("/documents")).json()["total"] == 3
    both = (await client.get("/documents", params=[("collection", "machines"), ("collection", "default")])).json()
    assert both["total"] == 3
    assert (await client.get("/documents", params={"collection": "nope"})).status_code == 404
    detail = (await client.get(f"/documents/{in_machines.json()['document_id']}")).json()
    assert detail["collection"] == "machines"

    question = {"question": "hydraulic pump seals", "top_k": 5}
    default_hits = (await client.post("/search", json=question)).json()["results"]
    assert {h["document_id"] for h in default_hits} >= {in_default["document_id"]}
    assert all(h["collection"] == "default" for h in default_hits)
    machine_hits = (await client.post("/search", json={**question, "collection": "machines"})).json()["results"]
    assert {(h["document_id"], h["collection"]) for h in machine_hits} == {
        (in_machines.json()["document_id"], "machines")
    }
    several = (await client.post("/search", json={**question, "collections": ["machines", "default"]})).json()
    assert {h["collection"] for h in several["results"]} == {"machines", "default"}
    assert (await client.post("/search", json={**question, "collection": "nope"})).status_code == 404
    both_fields = await client.post("/search", json={**question, "collection": "machines", "collections": ["x"]})
    assert both_fields.status_code == 422

    answer = await client.post("/query", json={**question, "collection": "machines", "answer_mode": "extract"})
    assert answer.status_code == 200, answer.text
    assert {s["collection"] for s in answer.json()["sources"]} == {"machines"}
    assert (await client.post("/query", json={**question, "collection": "nope"})).status_code == 404

    # renaming shows the new name everywhere, without touching the documents
    await client.patch("/collections/machines", json={"name": "plant"})
    renamed_hits = (await client.post("/search", json={**question, "collection": "plant"})).json()["results"]
    assert {h["collection"] for h in renamed_hits} == {"plant"}
    assert (await client.post("/search", json={**question, "collection": "machines"})).status_code == 404

    # deleting the collection removes its documents and chunks, nothing else
    deleted = (await client.delete("/collections/plant")).json()
    assert deleted["documents_deleted"] == 1
    assert (await client.get(f"/documents/{in_machines.json()['document_id']}")).status_code == 404
    everywhere = (await client.post("/search", json={**question, "top_k": 20})).json()["results"]
    assert in_machines.json()["document_id"] not in {h["document_id"] for h in everywhere}
    assert (await client.get("/documents")).json()["total"] == 2
    assert await container.store.check_integrity() == []


async def chat_completions_take_a_collection(client: httpx.AsyncClient) -> None:
    await client.post("/collections", json={"name": "machines"})
    await ingest(client, "manual.txt", MANUAL, "machines")
    await ingest(client, "coffee.txt", OTHER)
    messages = [{"role": "user", "content": "How often do the hydraulic pump seals need replacing?"}]

    def sources(response: httpx.Response) -> set[str]:
        assert response.status_code == 200, response.text
        return {s["collection"] for s in response.json()["sources"]}

    by_model = await client.post(
        "/v1/chat/completions", json={"model": "carrag:machines", "messages": messages, "answer_mode": "extract"}
    )
    assert sources(by_model) == {"machines"}
    by_field = await client.post(
        "/v1/chat/completions",
        json={"model": "carrag", "collection": "machines", "messages": messages, "answer_mode": "extract"},
    )
    assert sources(by_field) == {"machines"}
    unknown = await client.post("/v1/chat/completions", json={"model": "carrag:nope", "messages": messages})
    assert unknown.status_code == 404 and "collection 'nope' does not exist" in unknown.json()["error"]["message"]
    models = [m["id"] for m in (await client.get("/v1/models")).json()["data"]]
    assert models == ["carrag", "carrag:machines"]


# --- on SQLite (the Elasticsearch runs: test_collections_elasticsearch.py) -------------------------------
async def test_create_list_rename_delete(client: httpx.AsyncClient) -> None:
    await create_list_rename_delete(client)


async def test_documents_live_in_their_collection(client: httpx.AsyncClient, container: Container) -> None:
    await documents_live_in_their_collection(client, container)


async def test_chat_completions_take_a_collection(client: httpx.AsyncClient) -> None:
    await chat_completions_take_a_collection(client)


async def test_query_stream_takes_a_collection(client: httpx.AsyncClient) -> None:
    await client.post("/collections", json={"name": "machines"})
    await ingest(client, "manual.txt", MANUAL, "machines")
    await ingest(client, "coffee.txt", OTHER)
    body = {"question": "hydraulic pump seals", "collection": "machines", "answer_mode": "extract"}
    async with client.stream("POST", "/query/stream", json=body) as response:
        assert response.status_code == 200
        text = (await response.aread()).decode()
    blocks = [block.split("\n") for block in text.replace("\r\n", "\n").split("\n\n") if block.strip()]
    sources = next(
        json.loads(line.removeprefix("data:").strip())
        for lines in blocks
        if "event: sources" in lines
        for line in lines
        if line.startswith("data:")
    )
    assert sources and {source["collection"] for source in sources} == {"machines"}
    missing = await client.post("/query/stream", json={**body, "collection": "nope"})
    assert missing.status_code == 404

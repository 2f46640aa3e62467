"""GET /documents sorting and file-name search (issue 14, item 7)."""

from __future__ import annotations

import httpx

from tests.api.test_document_files import TEXT, upload


async def test_sort_order_and_file_name_search(client: httpx.AsyncClient) -> None:
    small = await upload(client, "Zebra crossing.txt", b"Stop at the zebra crossing for pedestrians. " * 3)
    large = await upload(client, "alpha-manual.md", TEXT * 20, chunk_size="400")
    other = await upload(client, "Beta notes.txt", b"Beta notes about wiper blades and washer fluid. " * 3)

    def names(response: httpx.Response) -> list[str]:
        assert response.status_code == 200, response.text
        return [d["filename"] for d in response.json()["items"]]

    assert names(await client.get("/documents")) == ["Beta notes.txt", "alpha-manual.md", "Zebra crossing.txt"]
    assert names(await client.get("/documents", params={"sort": "filename", "order": "asc"})) == [
        "alpha-manual.md",
        "Beta notes.txt",
        "Zebra crossing.txt",
    ]
    by_chunks = (await client.get("/documents", params={"sort": "chunk_count", "order": "desc"})).json()["items"]
    assert by_chunks[0]["document_id"] == large["document_id"] and by_chunks[0]["chunk_count"] > 1

    found = await client.get("/documents", params={"filename": "NOTES"})
    assert names(found) == ["Beta notes.txt"] and found.json()["total"] == 1
    assert names(await client.get("/documents", params={"filename": "*.TXT", "sort": "filename", "order": "asc"})) == [
        "Beta notes.txt",
        "Zebra crossing.txt",
    ]
    assert (await client.get("/documents", params={"filename": "nothing-like-it"})).json()["total"] == 0
    assert {small["document_id"], other["document_id"]} <= {
        d["document_id"] for d in (await client.get("/documents", params={"filename": "*"})).json()["items"]
    }


async def test_bad_sort_or_order_is_422(client: httpx.AsyncClient) -> None:
    assert (await client.get("/documents", params={"sort": "size"})).status_code == 422
    assert (await client.get("/documents", params={"order": "up"})).status_code == 422

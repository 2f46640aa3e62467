"""GET /documents/{id}/file (issue 14, item 4): the kept original comes back byte for byte with its
media type and file name, goes with its document, and a 404 says whether the document or only its
original is missing."""

from __future__ import annotations

from pathlib import Path

import httpx

from carrag.api.main import create_app
from carrag.services.container import Container
from tests.conftest import close_container, make_settings, open_container
from tests.live_server import served_page

TEXT = ("Replace the cabin air filter every 20,000 km. Check the coolant level monthly. " * 30).encode()


async def upload(client: httpx.AsyncClient, name: str, data: bytes, **fields: str) -> dict:
    response = await client.post("/ingest/file", files={"file": (name, data)}, data=fields)
    assert response.status_code == 200, response.text
    return response.json()


async def test_upload_is_downloadable_exactly(client: httpx.AsyncClient, manual_pdf: bytes) -> None:
    pdf = await upload(client, "2019 F-150 manual.pdf", manual_pdf)
    text = await upload(client, "filters.txt", TEXT)

    response = await client.get(f"/documents/{pdf['document_id']}/file")
    assert response.status_code == 200
    assert response.content == manual_pdf
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-length"] == str(len(manual_pdf))
    disposition = response.headers["content-disposition"]
    assert disposition.startswith("attachment;") and 'filename="2019 F-150 manual.pdf"' in disposition
    assert response.headers["content-security-policy"] == "sandbox"

    response = await client.get(f"/documents/{text['document_id']}/file")
    assert response.content == TEXT and response.headers["content-type"].startswith("text/plain")


async def test_non_ascii_file_name_is_kept(client: httpx.AsyncClient) -> None:
    document = await upload(client, "Bremsflüssigkeit.md", "# Bremsflüssigkeit\n\nAlle zwei Jahre wechseln.".encode())
    response = await client.get(f"/documents/{document['document_id']}/file")
    assert response.headers["content-type"].startswith("text/markdown")
    disposition = response.headers["content-disposition"]
    assert (
        "filename*=UTF-8''Bremsfl%C3%BCssigkeit.md" in disposition and 'filename="Bremsfl_ssigkeit.md"' in disposition
    )


async def test_original_goes_with_its_document(client: httpx.AsyncClient, container: Container) -> None:
    first = await upload(client, "filters.txt", TEXT)
    second = await upload(client, "filters.txt", TEXT + b" Rotate the tyres.")
    assert second["replaced_document_id"] == first["document_id"]
    gone = await client.get(f"/documents/{first['document_id']}/file")
    assert gone.status_code == 404 and "No document" in gone.json()["detail"]
    assert (await client.get(f"/documents/{second['document_id']}/file")).content.endswith(b"Rotate the tyres.")

    assert (await client.delete(f"/documents/{second['document_id']}")).status_code == 200
    assert (await client.get(f"/documents/{second['document_id']}/file")).status_code == 404
    assert await container.store.check_integrity() == []

    await upload(client, "again.txt", TEXT + b" Once more.")
    assert (await client.post("/admin/reset", json={"confirm": True})).status_code == 200
    assert await container.store.check_integrity() == []
    assert await container.store.get_original((await upload(client, "x.txt", TEXT))["document_id"]) is not None


async def test_unknown_document_is_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/documents/nope/file")
    assert response.status_code == 404 and response.json()["detail"] == "No document with id nope."


async def test_nothing_kept_when_switched_off(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, keep_originals=False), embedding_backend)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
        ) as client:
            document = await upload(client, "filters.txt", TEXT)
            response = await client.get(f"/documents/{document['document_id']}/file")
            assert response.status_code == 404
            assert "has no kept original" in response.json()["detail"] and "KEEP_ORIGINALS" in response.json()["detail"]
            assert (await client.get(f"/documents/{document['document_id']}")).status_code == 200
    finally:
        await close_container(container)


async def test_url_ingest_keeps_the_fetched_bytes(tmp_path: Path, embedding_backend) -> None:
    page = b"<html><head><title>Tyres</title></head><body><p>" + TEXT + b"</p></body></html>"
    container = await open_container(make_settings(tmp_path, fetch_allowed_hosts="127.0.0.1"), embedding_backend)
    try:
        with served_page(page) as base:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(container=container)), base_url="http://carrag.test"
            ) as client:
                response = await client.post("/ingest/url", json={"url": f"{base}/guides/tyres"})
                assert response.status_code == 200, response.text
                file = await client.get(f"/documents/{response.json()['document_id']}/file")
        assert file.status_code == 200 and file.content == page
        assert file.headers["content-type"] == "text/html; charset=utf-8"
        assert 'filename="tyres.html"' in file.headers["content-disposition"]
    finally:
        await close_container(container)

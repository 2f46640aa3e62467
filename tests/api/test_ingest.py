from __future__ import annotations

import sqlite3

import httpx
import pytest
from pydantic import ValidationError

from carrag.services.container import Container
from tests.conftest import make_settings


async def test_pdf_upload_end_to_end(client: httpx.AsyncClient, container: Container, manual_pdf: bytes) -> None:
    response = await client.post(
        "/ingest/file",
        files={"file": ("2019_Ford_F150_Owners_Manual.pdf", manual_pdf, "application/pdf")},
        data={"tags": "Maintenance, trucks ,"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ingested" and body["chunk_count"] >= 2
    assert body["filename"] == "2019_Ford_F150_Owners_Manual.pdf"
    # deterministic fallback tags (make, model, year, type) then the user's, lower-cased, no duplicates
    assert body["tags"][:4] == ["ford", "f-150", "2019", "owners manual"]
    assert body["tags"][-2:] == ["maintenance", "trucks"]
    assert len(body["tags"]) == len(set(body["tags"]))

    chunks = (await client.get(f"/documents/{body['document_id']}/chunks")).json()
    assert chunks["total"] == body["chunk_count"] == len(chunks["items"])
    assert all(c["vector_dimension"] == 384 for c in chunks["items"])
    assert {p for c in chunks["items"] for p in c["pages"]} == {1, 3, 4}

    path = container.settings.resolved_sqlite_path
    connection = sqlite3.connect(path)
    fts_hits = connection.execute(
        'SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH \'"FL" AND "500S"\''
    ).fetchone()[0]
    connection.close()
    assert fts_hits >= 1, "the chunks are searchable by FTS5"


async def test_markdown_upload_default_source_and_tags(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/ingest/file",
        files={"file": ("notes.md", b"# Notes\n\nThe snapshot retention is thirty days.", "text/markdown")},
    )
    assert response.status_code == 200
    assert response.json()["source_id"] == "notes.md"


async def test_validation_errors_are_400_with_detail(client: httpx.AsyncClient) -> None:
    cases = [
        (("virus.exe", b"MZ..."), "Unsupported file type"),
        (("empty.txt", b""), "empty"),
        (("blank.md", b"   \n\n  "), "no extractable text"),
        (("nothing", b"data"), "Unsupported file type"),
    ]
    for (name, data), message in cases:
        response = await client.post("/ingest/file", files={"file": (name, data)})
        assert response.status_code == 400, (name, response.text)
        assert message in response.json()["detail"]


async def test_missing_file_field_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/ingest/file", data={"tags": "x"})
    assert response.status_code == 422


async def test_url_ingest_refuses_private_addresses(client: httpx.AsyncClient) -> None:
    response = await client.post("/ingest/url", json={"url": "http://127.0.0.1:1/secret"})
    assert response.status_code == 400
    assert "loopback" in response.json()["detail"]


async def test_url_ingest_refuses_other_schemes(client: httpx.AsyncClient) -> None:
    response = await client.post("/ingest/url", json={"url": "file:///etc/passwd"})
    assert response.status_code == 400
    assert "http and https" in response.json()["detail"]


async def test_overlap_above_half_the_chunk_size_is_refused(client: httpx.AsyncClient) -> None:
    """Regression: overlap 49 with size 50 made one chunk per character (each embedded), so one
    upload could cost millions of embeddings."""
    response = await client.post(
        "/ingest/file",
        files={"file": ("notes.txt", b"some words " * 500)},
        data={"chunking": "fixed", "chunk_size": "50", "chunk_overlap": "49"},
    )
    assert response.status_code == 400 and "at most half of chunk_size" in response.json()["detail"]
    listing = (await client.get("/documents")).json()
    assert listing["total"] == 0


def test_overlap_setting_above_half_the_chunk_size_is_refused(tmp_path) -> None:
    with pytest.raises(ValidationError, match="at most half of CHUNK_SIZE"):
        make_settings(tmp_path, chunk_size=100, chunk_overlap=60)


async def test_same_file_under_another_source_id_is_a_duplicate(client: httpx.AsyncClient) -> None:
    text = b"# Towing\n\nCross the safety chains under the tongue of the trailer.\n"
    first = await client.post("/ingest/file", files={"file": ("towing.md", text)})  # curl: source id = file name
    assert first.status_code == 200 and first.json()["status"] == "ingested"
    copy = await client.post(
        "/ingest/file",
        files={"file": ("towing.md", text.replace(b"\n", b"\r\n"))},
        data={"source_id": "docs/towing.md"},
    )
    assert copy.status_code == 200, copy.text
    body = copy.json()
    assert body["status"] == "duplicate"
    assert (body["document_id"], body["source_id"]) == (first.json()["document_id"], "towing.md")
    listing = (await client.get("/documents")).json()
    assert [item["source_id"] for item in listing["items"]] == ["towing.md"]


async def test_reupload_with_new_tags_updates_them_without_re_embedding(
    client: httpx.AsyncClient, container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = b"Chainsaw chain tension and bar oil. " * 30
    first = (await client.post("/ingest/file", files={"file": ("saw.txt", text)}, data={"tags": "garden"})).json()

    async def no_embedding(*args, **kwargs):
        raise AssertionError("the same content must not be embedded again")

    monkeypatch.setattr(container.embedder, "embed_documents", no_embedding)
    again = await client.post("/ingest/file", files={"file": ("saw.txt", text)}, data={"tags": "Tools, garden"})
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["status"] == "updated" and body["document_id"] == first["document_id"]
    assert body["tags"] == [*first["tags"], "tools"]
    stored = (await client.get(f"/documents/{first['document_id']}")).json()
    assert stored["tags"] == body["tags"]
    listed = (await client.get("/documents", params={"tag": "tools"})).json()
    assert [d["document_id"] for d in listed["items"]] == [first["document_id"]]

    same = (await client.post("/ingest/file", files={"file": ("saw.txt", text)}, data={"tags": "tools"})).json()
    assert same["status"] == "unchanged" and same["tags"] == body["tags"], "tags it already has change nothing"


async def test_every_entry_point_has_the_same_tag_limit(client: httpx.AsyncClient) -> None:
    many = [f"tag{n}" for n in range(20_000)]
    upload = await client.post(
        "/ingest/file", files={"file": ("a.txt", b"Brake fluid every two years.")}, data={"tags": ",".join(many)}
    )
    assert upload.status_code == 400 and "20,000 tags given; the limit is 50" in upload.json()["detail"]
    by_url = await client.post("/ingest/url", json={"url": "https://example.com", "tags": many[:51]})
    assert by_url.status_code == 422 and "51 tags given; the limit is 50" in str(by_url.json()["detail"])

    stored = await client.post(
        "/ingest/file", files={"file": ("a.txt", b"Brake fluid every two years.")}, data={"tags": "a,b"}
    )
    patch = await client.patch(f"/documents/{stored.json()['document_id']}", json={"tags": many[:51]})
    assert patch.status_code == 422 and "51 tags given; the limit is 50" in str(patch.json()["detail"])
    long_tag = await client.patch(f"/documents/{stored.json()['document_id']}", json={"tags": ["x" * 201]})
    assert long_tag.status_code == 422 and "longer than 200 characters" in str(long_tag.json()["detail"])


async def test_an_upload_s_path_is_dropped_from_its_name(client: httpx.AsyncClient) -> None:
    response = await client.post("/ingest/file", files={"file": ("../../../../tmp/x.txt", b"Brake fluid lasts.")})
    assert response.status_code == 200
    assert (response.json()["filename"], response.json()["source_id"]) == ("x.txt", "x.txt")


async def test_a_form_with_two_files_is_refused_and_nothing_is_stored(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/ingest/file",
        files=[("file", ("a.txt", b"Brake fluid lasts two years.")), ("file", ("b.txt", b"Oil lasts one year."))],
    )
    assert response.status_code == 400 and "repeats file" in response.json()["detail"]
    assert (await client.get("/documents")).json()["total"] == 0

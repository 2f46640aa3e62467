"""Hostile uploads through the API (issue 25 rows 2-9): each answers 400/413 naming the limit, never a
500, and the documents ingested before are all still listed and searchable afterwards."""

from __future__ import annotations

import httpx
import pytest

from carrag.bench import hostile_inputs as hostile
from tests.services.parsers.formats import fixture_bytes

# (file name, bytes, status, words the message must hold); the OCR rows are in test_budgets.py
HOSTILE = [
    ("image.pdf", hostile.pdf_with_a_huge_image, 413, "MAX_IMAGE_PIXELS"),
    ("bomb.xlsx", lambda: hostile.xlsx_zip_bomb(members=1), 400, "Bad CRC"),
    ("much-xml.docx", hostile.docx_with_much_xml, 413, "MAX_MARKUP_BYTES"),
    ("far.xlsx", hostile.xlsx_with_far_cells, 413, "MAX_SHEET_CELLS"),
    ("attributes.html", hostile.html_with_many_attributes, 413, "MAX_HTML_ATTRIBUTES"),
    ("messages.eml", hostile.eml_nested_messages, 400, "MAX_EMAIL_NESTING"),
    ("multiparts.eml", hostile.eml_nested_multiparts, 400, "MAX_EMAIL_NESTING"),
    ("lying.pdf", hostile.pdf_whose_page_count_lies, 400, "page tree is damaged"),
    ("picture.png", lambda: hostile.png(20_000, 20_000), 413, "MAX_IMAGE_PIXELS"),
]


@pytest.mark.slow
async def test_hostile_uploads_are_refused_and_the_store_keeps_serving(client: httpx.AsyncClient) -> None:
    before = await client.post(
        "/ingest/file", files={"file": ("workshop_notes.docx", fixture_bytes("workshop_notes.docx"))}
    )
    assert before.status_code == 200, before.text
    document_id = before.json()["document_id"]

    for name, build, status, words in HOSTILE:
        response = await client.post("/ingest/file", files={"file": (name, build())})
        assert response.status_code == status, (name, response.text)
        assert words in response.text, (name, response.text)

    surrogates = await client.post("/ingest/file", files={"file": ("broken.json", hostile.json_with_lone_surrogates())})
    assert surrogates.status_code == 200, surrogates.text
    chunks = (await client.get(f"/documents/{surrogates.json()['document_id']}/chunks")).json()["items"]
    assert any("broken \ufffd pair" in chunk["text"] for chunk in chunks)

    listed = (await client.get("/documents")).json()["items"]
    assert document_id in {document["document_id"] for document in listed}
    found = (await client.post("/search", json={"question": "motor mount torque", "top_k": 3})).json()
    assert any(hit["document_id"] == document_id for hit in found["results"]), found

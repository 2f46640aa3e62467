"""Hostile uploads through the API: every file of the bad-input corpus gets a clear JSON answer (never
a 500), the service keeps serving, and the store never holds a partial document.

The corpus and each file's allowed answers are in tests/fixtures/bad_inputs/make_bad_inputs.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.container import Container
from carrag.services.requests import display_filename
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.fixtures.bad_inputs.make_bad_inputs import CASES, EXTRACTED_LIMIT, UPLOAD_LIMIT, BadInput


@pytest.fixture(scope="module")
async def corpus_container(tmp_path_factory, embedding_backend) -> AsyncIterator[Container]:
    settings = make_settings(
        tmp_path_factory.mktemp("hostile"),
        max_upload_bytes=UPLOAD_LIMIT,
        max_extracted_chars=EXTRACTED_LIMIT,
        allow_duplicates=True,  # several hostile files carry the same text under different names
    )
    container = await open_container(settings, embedding_backend)
    yield container
    await close_container(container)


@pytest.fixture(scope="module")
async def corpus_client(corpus_container: Container) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(container=corpus_container)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://carrag.test", timeout=120) as client:
        yield client


async def assert_store_consistent(container: Container) -> None:
    assert await container.store.check_integrity() == []


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_hostile_upload_gets_a_clear_answer(
    case: BadInput, corpus_client: httpx.AsyncClient, corpus_container: Container
) -> None:
    store = corpus_container.store
    before = (await store.list_documents(offset=0, limit=1)).total

    response = await corpus_client.post("/ingest/file", files={"file": (case.name, case.data())})

    assert response.status_code in case.expect, f"{case.name}: {response.status_code} {response.text[:300]}"
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    after = (await store.list_documents(offset=0, limit=1)).total
    if response.status_code == 200:
        assert after == before + 1
        listing = (await corpus_client.get(f"/documents/{body['document_id']}/chunks", params={"limit": 1000})).json()
        assert listing["total"] == body["chunk_count"] == len(listing["items"]) > 0
        assert [item["chunk_index"] for item in listing["items"]] == list(range(body["chunk_count"]))
        assert body["filename"] == display_filename(case.name)  # "../../../etc/passwd.txt" is "passwd.txt"
    else:
        assert isinstance(body["detail"], str) and body["detail"], body
        if case.detail:
            assert case.detail.lower() in body["detail"].lower(), body["detail"]
        assert after == before, "a refused upload left a document behind"
        assert await store.find_by_source(display_filename(case.name)) is None
    health = await corpus_client.get("/health")
    assert health.status_code == 200 and health.json()["components"]["store"]["status"] == "ok"
    await assert_store_consistent(corpus_container)


async def test_pdf_page_limit(tmp_path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path / "pages", max_pdf_pages=100), embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as limited:
        data = (FIXTURES / "many_blank_pages.pdf").read_bytes()
        response = await limited.post("/ingest/file", files={"file": ("many_blank_pages.pdf", data)})
    assert response.status_code == 400
    assert "MAX_PDF_PAGES" in response.json()["detail"]
    assert (await container.store.list_documents(offset=0, limit=1)).total == 0
    await close_container(container)


BOUNDARY = "carrag-test-boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
PART_HEAD = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\n'
    "Content-Type: text/plain\r\n\r\n"
).encode()
GOOD_TEXT = b"The recommended cold tire pressure is 35 psi front and rear."

MALFORMED_MULTIPART = [
    ("garbage body", MULTIPART, b"this is not multipart at all"),
    ("no boundary parameter", "multipart/form-data", PART_HEAD + GOOD_TEXT + f"\r\n--{BOUNDARY}--\r\n".encode()),
    (
        "wrong boundary",
        "multipart/form-data; boundary=other",
        PART_HEAD + GOOD_TEXT + f"\r\n--{BOUNDARY}--\r\n".encode(),
    ),
    ("empty body", MULTIPART, b""),
    ("no closing boundary", MULTIPART, PART_HEAD + GOOD_TEXT),
    ("cut inside the part headers", MULTIPART, PART_HEAD[:40]),
    (
        "part without headers",
        MULTIPART,
        f"--{BOUNDARY}\r\n\r\n".encode() + GOOD_TEXT + f"\r\n--{BOUNDARY}--\r\n".encode(),
    ),
    (
        "part without a name",
        MULTIPART,
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; filename="a.txt"\r\n\r\n'.encode()
        + GOOD_TEXT
        + f"\r\n--{BOUNDARY}--\r\n".encode(),
    ),
    (
        "header line without colon",
        MULTIPART,
        f"--{BOUNDARY}\r\nthis header has no colon\r\n\r\n".encode() + GOOD_TEXT + f"\r\n--{BOUNDARY}--\r\n".encode(),
    ),
    (
        "huge part header",
        MULTIPART,
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{"a" * 200_000}.txt"\r\n\r\n'.encode()
        + GOOD_TEXT
        + f"\r\n--{BOUNDARY}--\r\n".encode(),
    ),
    (
        "file field sent as plain text",
        MULTIPART,
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\n'.encode()
        + GOOD_TEXT
        + f"\r\n--{BOUNDARY}--\r\n".encode(),
    ),
    (
        "thousands of fields",
        MULTIPART,
        b"".join(
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nx\r\n'.encode() for i in range(5000)
        )
        + f"--{BOUNDARY}--\r\n".encode(),
    ),
    ("JSON instead of a form", "application/json", b'{"file": "notes.txt"}'),
    ("no content type", "", GOOD_TEXT),
]


@pytest.mark.parametrize(
    ("content_type", "raw"), [c[1:] for c in MALFORMED_MULTIPART], ids=[c[0] for c in MALFORMED_MULTIPART]
)
async def test_malformed_multipart_is_a_clear_4xx(
    client: httpx.AsyncClient, container: Container, content_type: str, raw: bytes
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = await client.post("/ingest/file", content=raw, headers=headers)
    assert 400 <= response.status_code < 500, response.text[:300]
    assert "detail" in response.json()
    assert (await container.store.list_documents(offset=0, limit=1)).total == 0
    assert (await client.get("/health")).status_code == 200


async def test_streamed_upload_over_the_limit_is_413_not_a_parse_error(tmp_path, embedding_backend) -> None:
    """No Content-Length (chunked): the limit trips mid-stream; FastAPI would turn that into a 400."""
    container = await open_container(make_settings(tmp_path, max_upload_bytes=100_000), embedding_backend)
    app = create_app(container=container)
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        yield PART_HEAD
        for _ in range(64):
            sent += 65536
            yield b"a" * 65536
        yield f"\r\n--{BOUNDARY}--\r\n".encode()

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        response = await client.post("/ingest/file", content=body(), headers={"Content-Type": MULTIPART})
        assert response.status_code == 413, response.text
        # the number is the upload limit plus room for the form, so the detail names where it comes from
        assert "(MAX_UPLOAD_BYTES plus" in response.json()["detail"]
        declared = await client.post(
            "/ingest/file", content=PART_HEAD + b"a" * 300_000, headers={"Content-Type": MULTIPART}
        )
        assert declared.status_code == 413
        assert "(MAX_UPLOAD_BYTES plus" in declared.json()["detail"]
    assert (await container.store.list_documents(offset=0, limit=1)).total == 0
    await close_container(container)


async def test_json_bodies_have_their_own_smaller_limit(tmp_path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, max_json_body_bytes=10_000), embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        big = b'{"question": "oil", "tags": [' + b'"x",' * 5000 + b'"x"]}'
        response = await client.post("/search", content=big, headers={"Content-Type": "application/json"})
        assert response.status_code == 413
        assert response.json()["detail"] == "Request body is larger than 10000 bytes (MAX_JSON_BODY_BYTES)."
        # the upload limit still applies to multipart bodies, not the JSON one
        upload = await client.post("/ingest/file", files={"file": ("notes.txt", GOOD_TEXT * 400)})
        assert upload.status_code == 200, upload.text
    await close_container(container)

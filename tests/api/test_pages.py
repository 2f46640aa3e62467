"""GET /documents/{id}/pages/{n}/image (issue 28 part 2): a PDF page drawn from its kept original with
the chunk tinted where its stored regions say and an answer's sentences marked; clear refusals; cached."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services import page_images
from carrag.services.admission import AdmissionGate
from carrag.services.container import Container
from tests.api.page_pixels import count_outside, orange, pixels, scale_of, share_inside, tinted
from tests.conftest import close_container, make_settings, open_container


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> str:
    response = await client.post("/ingest/file", files={"file": (name, data)})
    assert response.status_code == 200, response.text
    return response.json()["document_id"]


async def chunks_of(client: httpx.AsyncClient, document_id: str) -> list[dict]:
    response = await client.get(f"/documents/{document_id}/chunks")
    assert response.status_code == 200, response.text
    return response.json()["items"]


def rects(chunk: dict, page: int) -> list[tuple[int, int, int, int]]:
    return [(r["x0"], r["y0"], r["x1"], r["y1"]) for r in chunk["regions"] if r["page"] == page]


async def test_the_chunk_is_tinted_where_its_regions_are(client: httpx.AsyncClient, manual_pdf: bytes) -> None:
    document_id = await upload(client, "manual.pdf", manual_pdf)
    chunks = await chunks_of(client, document_id)
    assert all(chunk["regions"] for chunk in chunks), "every chunk of a text PDF knows where it is"
    chunk = chunks[0]
    page = chunk["pages"][0]

    response = await client.get(f"/documents/{document_id}/pages/{page}/image", params={"chunk": 0})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    assert response.headers["x-page-count"] == "4"
    image = pixels(response.content)
    scale = scale_of(image, response.headers["x-page-size"])
    assert image.shape[0] * image.shape[1] <= 2_000_000  # PAGE_IMAGE_MAX_PIXELS
    marked = tinted(image)
    assert share_inside(marked, rects(chunk, page), scale) > 0.6
    assert count_outside(marked, rects(chunk, page), scale) == 0

    plain = pixels((await client.get(f"/documents/{document_id}/pages/{page}/image")).content)
    assert not tinted(plain).any(), "without a chunk nothing is marked"


async def test_highlights_mark_part_of_the_chunk(client: httpx.AsyncClient, manual_pdf: bytes) -> None:
    document_id = await upload(client, "manual.pdf", manual_pdf)
    chunk = (await chunks_of(client, document_id))[0]
    first_line = next(r for r in chunk["regions"] if r["end"] - r["start"] > 40)
    start = first_line["start"] + len(chunk["text"]) - (chunk["char_end"] - chunk["char_start"])
    url = f"/documents/{document_id}/pages/{first_line['page']}/image"

    response = await client.get(url, params={"chunk": 0, "highlight": f"{start}-{start + 10}"})
    assert response.status_code == 200, response.text
    image = pixels(response.content)
    scale = scale_of(image, response.headers["x-page-size"])
    line = (first_line["x0"], first_line["y0"], first_line["x1"], first_line["y1"])
    marked = orange(image)
    assert share_inside(marked, [line], scale) > 0.05
    left_part = (line[0], line[1], line[0] + (line[2] - line[0]) / 2, line[3])
    assert count_outside(marked, [left_part], scale) == 0, "ten characters mark the start of the line only"


async def test_refusals_say_why(client: httpx.AsyncClient, manual_pdf: bytes, tmp_path, embedding_backend) -> None:
    document_id = await upload(client, "manual.pdf", manual_pdf)
    text_id = await upload(client, "notes.txt", b"Rotate the tyres every 10,000 km. " * 20)
    cases = [
        (f"/documents/{document_id}/pages/9/image", {}, 404, "has 4 pages"),
        (f"/documents/{document_id}/pages/1/image", {"chunk": 99}, 404, "there is no chunk 99"),
        ("/documents/no-such-id/pages/1/image", {}, 404, "No document"),
        (f"/documents/{text_id}/pages/1/image", {}, 409, "only for PDFs"),
        (f"/documents/{document_id}/pages/1/image", {"window": "3-x"}, 400, "window must be"),
        (f"/documents/{document_id}/pages/1/image", {"highlight": "5-2", "chunk": 0}, 400, "start < end"),
        (f"/documents/{document_id}/pages/1/image", {"highlight": "0-5"}, 400, "needs the chunk"),
    ]
    for url, params, status, message in cases:
        response = await client.get(url, params=params)
        assert response.status_code == status, (url, params, response.text)
        assert message in response.json()["detail"], response.json()

    container = await open_container(make_settings(tmp_path / "plain", keep_originals=False), embedding_backend)
    app = create_app(container=container)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as plain:
            unkept = await upload(plain, "manual.pdf", manual_pdf)
            response = await plain.get(f"/documents/{unkept}/pages/1/image")
            assert response.status_code == 409 and "KEEP_ORIGINALS" in response.json()["detail"]
    finally:
        await close_container(container)


async def test_pictures_are_cached(
    client: httpx.AsyncClient, container: Container, manual_pdf: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    document_id = await upload(client, "manual.pdf", manual_pdf)
    drawn: list[int] = []
    draw = page_images.draw_page

    def counted(*args, **kwargs):
        drawn.append(args[2])
        return draw(*args, **kwargs)

    monkeypatch.setattr(page_images, "draw_page", counted)
    first = await client.get(f"/documents/{document_id}/pages/1/image", params={"chunk": 0})
    again = await client.get(f"/documents/{document_id}/pages/1/image", params={"chunk": 0})
    other = await client.get(f"/documents/{document_id}/pages/1/image", params={"chunk": 1})
    assert first.content == again.content and other.content != first.content
    assert drawn == [1, 1]
    assert container.page_images.cache.size == len(first.content) + len(other.content)

    assert (await client.delete(f"/documents/{document_id}")).status_code == 200
    gone = await client.get(f"/documents/{document_id}/pages/1/image", params={"chunk": 0})
    assert gone.status_code == 404, "a cached picture of a deleted document is not served"


async def test_drawing_is_bounded_and_off_the_event_loop(
    client: httpx.AsyncClient, container: Container, manual_pdf: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    document_id = await upload(client, "manual.pdf", manual_pdf)
    container.page_images.admission = AdmissionGate(1, None, "page drawing", timeout=0.3)
    started, release = threading.Event(), threading.Event()
    draw = page_images.draw_page

    def slow(*args, **kwargs):
        started.set()
        release.wait(10)
        return draw(*args, **kwargs)

    monkeypatch.setattr(page_images, "draw_page", slow)
    first = asyncio.create_task(client.get(f"/documents/{document_id}/pages/1/image", params={"chunk": 0}))
    try:
        assert await asyncio.to_thread(started.wait, 10)
        # the loop still answers while a page is drawn; a second drawing waits for the slot, then 429
        assert (await client.get(f"/documents/{document_id}")).status_code == 200
        second = await client.get(f"/documents/{document_id}/pages/3/image")
        assert second.status_code == 429 and "no free slot" in second.json()["detail"], second.text
    finally:
        release.set()
    assert (await first).status_code == 200

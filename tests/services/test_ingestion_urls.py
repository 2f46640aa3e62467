"""URL ingestion against a loopback site: it decodes what servers send even when the declared charset
is unknown or wrong (a charset like ``utf8mb4`` used to be passed to ``bytes.decode`` unguarded: a
500), and documents of the supported formats are parsed by their media type."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from carrag.services.container import Container
from carrag.services.fetchers.address_policy import system_resolver
from carrag.services.fetchers.http import HttpFetcher
from carrag.services.ingest_reading import document_name
from carrag.services.parsers.decoding import decode_declared, known_codec
from carrag.services.requests import IngestCommand
from tests.conftest import close_container, make_settings, open_container
from tests.services.fetchers.fakes import FakeResolver
from tests.services.fetchers.loopback_site import LoopbackSite


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite() as running:
        yield running


@pytest.fixture
async def web_container(tmp_path, embedding_backend) -> AsyncIterator[Container]:
    settings = make_settings(tmp_path)
    fetcher = HttpFetcher(
        per_host_delay=0,
        allowed_hosts=["public.example"],
        resolver=FakeResolver({"public.example": ["127.0.0.1"]}, system_resolver),
    )
    container = await open_container(settings, embedding_backend, fetcher=fetcher)
    yield container
    await close_container(container)


async def stored_text(container: Container, document_id: str) -> str:
    return " ".join(listing.chunk.text for listing in await container.store.get_chunks(document_id))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/utf8mb4-page", "Wechseln Sie das Motoröl alle 15.000 km"),
        ("/mislabelled-text", "Crème brûlée, 5 °C."),
        ("/bogus-charset-text", "Température de l’huile : 90 °C."),
    ],
)
async def test_unknown_or_wrong_charsets_fall_back_to_detection(
    web_container: Container, site: LoopbackSite, path: str, expected: str
) -> None:
    result = await web_container.ingestion.ingest_url(site.url(path, host="public.example"), IngestCommand())
    assert result.status == "ingested"
    text = await stored_text(web_container, result.document_id)
    assert expected in text
    assert "\ufffd" not in text


def test_decode_declared() -> None:
    assert known_codec("UTF8MB4") == "utf-8"
    assert known_codec("no-such-charset") is None
    assert decode_declared("Öl".encode(), "utf8mb4") == ("Öl", "utf-8")
    assert decode_declared("Öl".encode("latin-1"), "iso-8859-1") == ("Öl", "iso8859-1")
    assert decode_declared("Öl".encode("utf-16"), "ascii")[0] == "Öl", "a byte-order mark wins"
    text, encoding = decode_declared("Prüfen Sie den Ölstand regelmäßig, bitte.".encode("cp1252"), "utf-8")
    assert text == "Prüfen Sie den Ölstand regelmäßig, bitte." and encoding != "utf-8"


@pytest.mark.parametrize(("path", "filename"), [("/notes.rtf", "notes.rtf"), ("/download", "document.rtf")])
async def test_documents_are_parsed_by_their_media_type(
    web_container: Container, site: LoopbackSite, path: str, filename: str
) -> None:
    url = site.url(path, host="public.example")
    result = await web_container.ingestion.ingest_url(url, IngestCommand())
    assert result.status == "ingested" and result.filename == url
    assert "Brake fluid: replace every two years (DOT 4)." in await stored_text(web_container, result.document_id)
    document = await web_container.store.get_document(result.document_id)
    assert document is not None and document.metadata["encoding"] == "cp1252"
    assert document_name(url, ".rtf") == filename

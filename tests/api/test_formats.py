"""Every supported format ingested end to end through the API, with each chunking strategy."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from carrag.api.main import create_app
from carrag.services.parsers import parse_file
from tests.conftest import FIXTURES, close_container, make_settings, open_container

FORMATS = FIXTURES / "formats"

# file, source_type, metadata expected (subset), phrases that must reach the chunks
CASES = [
    ("maintenance_guide.rst", "text", {"line_count": 22}, ["DOT 5.1 fluid", "900 full charge cycles"]),
    (
        "spare_parts.csv",
        "csv",
        {"row_count": 6, "column_count": 4, "delimiter": ","},
        ['CH-0421,"Chain, 11-speed",39.00', "ships with a charging cable"],
    ),
    (
        "service_schedule.json",
        "json",
        {"json_type": "object", "nesting_depth": 4},
        ['"bleed brakes with DOT 5.1 fluid"', '"battery_cycles": 900'],
    ),
    (
        "troubleshooting.html",
        "html",
        {"title": "Aurora T-200 Troubleshooting"},
        ["| E07 | Speed sensor not detected |", "## Motor noise"],
    ),
    (
        "workshop_notes.docx",
        "docx",
        {"paragraph_count": 9, "table_count": 2},
        ["| Crank arm bolt | 40 Nm | Yes \\| blue |", "# Wear limits"],
    ),
    (
        "service_log.xlsx",
        "xlsx",
        {"sheet_count": 3, "row_count": 7},
        ["## Sheet: Parts used", '"Chain replaced, brakes bled",89.5'],
    ),
    ("owners_handbook.md", "text", {"line_count": 31}, ["Walk assist", "aurora-cli pair"]),
    (
        "real/sample-presentation.pptx",
        "pptx",
        {"slide_count": 4, "title": "Title Slide"},
        ["## This is the second content slide", "| 2 | A2 | B2 | C2 |"],
    ),
    ("real/fake.odt", "odt", {"table_count": 1}, ["Lorem ipsum dolor sit amet.", "| Leader | Sarah | Mark | Ryan |"]),
    ("real/fake-doc.rtf", "rtf", {"encoding": "cp1252"}, ["My first paragraph.", "| Row 2, Cell 1 | Row 2, Cell 2 |"]),
    (
        "real/fake-email-attachment.eml",
        "email",
        {"subject": "Fake email with attachment", "body_type": "text/plain"},
        ["# Fake email with attachment", "Hey this is a fake attachment!"],
    ),
]


async def ingest(client: httpx.AsyncClient, path: Path, **form: str) -> dict:
    response = await client.post("/ingest/file", files={"file": (path.name, path.read_bytes())}, data=form)
    assert response.status_code == 200, response.text
    return response.json()


async def chunks_of(client: httpx.AsyncClient, document_id: str) -> list[dict]:
    response = await client.get(f"/documents/{document_id}/chunks", params={"limit": 1000})
    assert response.status_code == 200
    return response.json()["items"]


def assert_offsets(text: str, chunks: list[dict]) -> None:
    assert [c["chunk_index"] for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        span = text[chunk["char_start"] : chunk["char_end"]]
        header = chunk["text"][: len(chunk["text"]) - len(span)]  # a table's header rows, repeated
        assert header + span == chunk["text"] and (not header or header.startswith("|"))
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk["char_start"], chunk["char_end"]))
    assert all(ch.isspace() or i in covered for i, ch in enumerate(text)), "no text left out"


@pytest.mark.parametrize(("filename", "source_type", "metadata", "phrases"), CASES)
async def test_every_format_end_to_end(
    client: httpx.AsyncClient, filename: str, source_type: str, metadata: dict, phrases: list[str]
) -> None:
    path = FORMATS / filename
    body = await ingest(client, path, chunking="paragraph", chunk_size="200", chunk_overlap="40")
    assert body["status"] == "ingested" and body["filename"] == path.name
    filename = path.name

    document = (await client.get(f"/documents/{body['document_id']}")).json()
    assert document["source_type"] == source_type
    assert metadata.items() <= document["system_metadata"].items()
    assert document["system_metadata"]["chunking"] == {"strategy": "paragraph", "chunk_size": 200, "chunk_overlap": 40}

    parsed = parse_file(path.read_bytes(), filename)
    chunks = await chunks_of(client, body["document_id"])
    assert len(chunks) == body["chunk_count"] == document["chunk_count"] >= (2 if len(parsed.text) > 200 else 1)
    assert_offsets(parsed.text, chunks)
    assert all(len(c["text"]) <= 200 and c["vector_dimension"] == 384 for c in chunks)
    if source_type == "pptx":
        assert {page for c in chunks for page in c["pages"]} == {1, 2, 3, 4}, "slides are the pages"
    for phrase in phrases:
        assert any(phrase in c["text"] for c in chunks), phrase


async def test_markdown_strategy_stores_section_paths(client: httpx.AsyncClient) -> None:
    path = FORMATS / "owners_handbook.md"
    body = await ingest(client, path, chunking="markdown", chunk_size="200", chunk_overlap="30")
    chunks = await chunks_of(client, body["document_id"])
    assert_offsets(path.read_text(), chunks)
    sections = [c["section"] for c in chunks]
    assert sections[0] is None and chunks[0]["text"].startswith("Welcome to your new e-bike")
    assert "Setup > Saddle height" in sections and "Riding > Assistance levels > Walk assist" in sections
    pairing = next(c for c in chunks if "aurora-cli pair" in c["text"])
    assert pairing["section"] == "Setup > Display pairing", "the # comment inside the code fence is not a header"
    assert chunks[-1]["section"] == "Storage"


async def test_docx_and_xlsx_headings_become_sections(client: httpx.AsyncClient) -> None:
    docx = await ingest(
        client, FORMATS / "workshop_notes.docx", chunking="markdown", chunk_size="500", chunk_overlap="0"
    )
    by_section = {c["section"]: c["text"] for c in await chunks_of(client, docx["document_id"])}
    assert "| Motor mount | 12 Nm | Yes |" in by_section["Torque settings"]
    assert "stretched by 0.5 percent" in by_section["Wear limits > Chain"]
    xlsx = await ingest(client, FORMATS / "service_log.xlsx", chunking="markdown", chunk_size="500", chunk_overlap="0")
    by_section = {c["section"]: c["text"] for c in await chunks_of(client, xlsx["document_id"])}
    assert set(by_section) == {"Sheet: Services", "Sheet: Parts used"}
    assert "TY-2750,2,TRUE" in by_section["Sheet: Parts used"]


@pytest.mark.parametrize("strategy", ["recursive", "fixed", "paragraph", "sentence", "markdown"])
async def test_each_strategy_on_a_pdf_keeps_pages(client: httpx.AsyncClient, manual_pdf: bytes, strategy: str) -> None:
    response = await client.post(
        "/ingest/file",
        files={"file": ("manual.pdf", manual_pdf)},
        data={"chunking": strategy, "chunk_size": "150", "chunk_overlap": "30"},
    )
    assert response.status_code == 200, response.text
    document_id = response.json()["document_id"]
    chunks = await chunks_of(client, document_id)
    parsed = parse_file(manual_pdf, "manual.pdf")
    assert_offsets(parsed.text, chunks)
    for chunk in chunks:
        expected = [s.page for s in parsed.page_spans if s.start < chunk["char_end"] and s.end > chunk["char_start"]]
        assert chunk["pages"] == expected
    assert {p for c in chunks for p in c["pages"]} == {1, 3, 4}
    document = (await client.get(f"/documents/{document_id}")).json()
    assert document["system_metadata"]["chunking"]["strategy"] == strategy


@pytest.fixture
async def configured_client(tmp_path: Path, embedding_backend) -> AsyncIterator[httpx.AsyncClient]:
    """A client on settings CHUNKING_STRATEGY=sentence, PDF_MODE=markdown, MIN_CHUNK_SIZE=60."""
    settings = make_settings(tmp_path, chunking_strategy="sentence", pdf_mode="markdown", min_chunk_size=60)
    container = await open_container(settings, embedding_backend)
    app = create_app(container=container)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://carrag.test") as client:
        yield client
    await close_container(container)


async def test_settings_choose_the_strategy_and_pdf_mode(
    configured_client: httpx.AsyncClient, manual_pdf: bytes
) -> None:
    response = await configured_client.post("/ingest/file", files={"file": ("manual.pdf", manual_pdf)})
    assert response.status_code == 200, response.text
    document_id = response.json()["document_id"]
    document = (await configured_client.get(f"/documents/{document_id}")).json()
    assert document["system_metadata"]["chunking"]["strategy"] == "sentence"
    assert document["system_metadata"]["pdf_mode"] == "markdown"
    chunks = await chunks_of(configured_client, document_id)
    parsed = parse_file(manual_pdf, "manual.pdf", pdf_mode="markdown")
    assert_offsets(parsed.text, chunks)
    assert any("# Engine oil" in c["text"] and c["pages"][0] == 1 for c in chunks)


async def test_bad_files_are_clear_400s_and_store_nothing(client: httpx.AsyncClient, monkeypatch) -> None:
    cases = [
        ("broken.json", b'{"model": "Aurora", }', "not valid JSON"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested more than 200 levels"),
        ("broken.docx", b"PK\x03\x04 truncated", "not a readable .docx file"),
        ("locked.xlsx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64, "password-protected"),
        ("blank.html", b"<html><script>only()</script></html>", "no extractable text"),
        ("slides.pptx", b"PK\x03\x04", "not a readable .pptx file"),
        ("slides.ppt", b"\xd0\xcf\x11\xe0", "Unsupported file type (.ppt)"),
        ("mail.eml", b"no headers here", "not an e-mail message"),
    ]
    for filename, data, message in cases:
        response = await client.post("/ingest/file", files={"file": (filename, data)})
        assert response.status_code == 400, (filename, response.text)
        assert message in response.json()["detail"], (filename, response.json())

    monkeypatch.setitem(sys.modules, "docx", None)  # python-docx "not installed"
    response = await client.post(
        "/ingest/file", files={"file": ("workshop_notes.docx", (FORMATS / "workshop_notes.docx").read_bytes())}
    )
    assert response.status_code == 400
    assert "pip install python-docx" in response.json()["detail"]

    listing = (await client.get("/documents")).json()
    assert listing["total"] == 0, "no half-ingested documents"


async def test_source_files_are_code_chunked_by_default(client: httpx.AsyncClient) -> None:
    source = 'import math\n\n\ndef to_bar(psi):\n    return psi * 0.0689476\n\n\nclass Gauge:\n    unit = "bar"\n'
    response = await client.post(
        "/ingest/file", files={"file": ("gauge.py", source.encode())}, data={"chunk_size": "50", "chunk_overlap": "0"}
    )
    assert response.status_code == 200, response.text
    document = (await client.get(f"/documents/{response.json()['document_id']}")).json()
    assert document["source_type"] == "code" and document["system_metadata"]["language"] == "python"
    assert document["system_metadata"]["chunking"]["strategy"] == "code"
    chunks = await chunks_of(client, document["document_id"])
    assert [c["text"].splitlines()[0] for c in chunks] == ["import math", "def to_bar(psi):", "class Gauge:"]
    assert [c["section"] for c in chunks] == [None, "def to_bar", "class Gauge"]


async def test_unknown_strategy_is_rejected_by_validation(client: httpx.AsyncClient) -> None:
    response = await client.post("/ingest/file", files={"file": ("a.md", b"# A\n\ntext")}, data={"chunking": "words"})
    assert response.status_code == 422

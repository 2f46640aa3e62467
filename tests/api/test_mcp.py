"""The MCP tools through the official SDK's own client, over both transports: streamable HTTP (the
``/mcp`` endpoint of a real uvicorn server on 127.0.0.1) and stdio (``carrag mcp`` as a subprocess)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from carrag.api.main import create_app
from carrag.bench.server import clean_environment
from carrag.services.container import Container
from carrag.services.requests import IngestCommand
from carrag.services.retrieval.search import EMPTY_INDEX_MESSAGE
from tests.conftest import FIXTURES, close_container, make_settings, open_container
from tests.live_server import LiveServer

API_KEY = "sekret"
SOURCES = ("brakes.txt", "oil_service.txt", "tire_pressure.txt")


async def ingest(container: Container) -> None:
    for name in SOURCES:
        await container.ingestion.ingest_file(
            (FIXTURES / "corpus" / name).read_bytes(), f"manuals/{name}", IngestCommand()
        )
    await container.collections.create("workshop")
    await container.ingestion.ingest_file(
        (FIXTURES / "corpus" / "oil_service.txt").read_bytes(),
        "workshop/oil_service.txt",
        IngestCommand(collections=("workshop",)),
    )


def text_of(result) -> str:  # type: ignore[no-untyped-def]
    assert [item.type for item in result.content] == ["text"]
    return result.content[0].text


async def check_tools(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search_documents", "list_sources", "list_collections"}
    assert set(tools["search_documents"].input_schema["properties"]) == {
        "query",
        "top_k",
        "source",
        "collections",
        "tags",
        "tag_prefix",
        "metadata",
        "source_type",
        "created_after",
        "created_before",
        "filename",
    }
    assert tools["search_documents"].input_schema["required"] == ["query"]

    found = await client.call_tool("search_documents", {"query": "How often is the brake fluid replaced?", "top_k": 2})
    assert not found.is_error
    text = text_of(found)
    assert text.startswith("[Source: manuals/brakes.txt | Score: ")
    assert "brake fluid" in text and text.count("[Source: ") <= 2

    only = text_of(await client.call_tool("search_documents", {"query": "oil", "source": "manuals/tire*"}))
    assert {line.split(" | ")[0] for line in only.splitlines() if line.startswith("[Source: ")} == {
        "[Source: manuals/tire_pressure.txt"
    }

    by_name = text_of(
        await client.call_tool("search_documents", {"query": "oil", "filename": "*tire_*.txt", "top_k": 5})
    )
    assert {line.split(" | ")[0] for line in by_name.splitlines() if line.startswith("[Source: ")} == {
        "[Source: manuals/tire_pressure.txt"
    }
    nothing = {"query": "oil", "metadata": {"team": "a"}, "source_type": ["text"], "created_after": "2000-01-01"}
    assert "[Source: " not in text_of(await client.call_tool("search_documents", nothing))
    bad_date = await client.call_tool("search_documents", {"query": "oil", "created_before": "yesterday"})
    assert bad_date.is_error and "created_before must be an ISO 8601" in text_of(bad_date)

    listed = text_of(await client.call_tool("list_sources", {}))
    assert listed.splitlines()[1:] == [f"- manuals/{name} (text)" for name in SOURCES]

    refused = await client.call_tool("search_documents", {"query": "oil", "top_k": 0})
    assert refused.is_error and "top_k must be between 1 and" in text_of(refused)

    collections = text_of(await client.call_tool("list_collections", {}))
    assert collections.splitlines()[1:3] == ["- default (3)", "- workshop (1)"]
    in_workshop = text_of(await client.call_tool("search_documents", {"query": "oil", "collections": ["workshop"]}))
    assert in_workshop.startswith("[Source: workshop/oil_service.txt") and "| Collection: workshop]" in in_workshop
    assert in_workshop.count("[Source: ") == 1
    workshop_sources = text_of(await client.call_tool("list_sources", {"collection": "workshop"}))
    assert workshop_sources.splitlines()[1:] == ["- workshop/oil_service.txt (text)"]
    unknown = await client.call_tool("search_documents", {"query": "oil", "collections": ["nope"]})
    assert unknown.is_error and "collection 'nope' does not exist" in text_of(unknown)


@pytest.fixture
async def served(container: Container) -> AsyncIterator[LiveServer]:
    container.settings.api_keys = [SecretStr(API_KEY)]
    with LiveServer(create_app(container=container)) as live:
        yield live


async def test_streamable_http_at_slash_mcp(served: LiveServer, container: Container) -> None:
    # The SDK's documented way to send headers: its own httpx2 client, passed to the transport.
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {API_KEY}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{served.url}/mcp", http_client=http)) as client:
            empty = await client.call_tool("search_documents", {"query": "brake fluid"})
            assert text_of(empty) == EMPTY_INDEX_MESSAGE
            await ingest(container)
            await check_tools(client)


async def test_streamable_http_needs_the_api_key(served: LiveServer) -> None:
    response = httpx.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 401 and "API key" in response.json()["detail"]


async def test_a_get_or_delete_is_answered_at_once(served: LiveServer) -> None:
    """Stateless: no event stream for messages the server starts (a GET held one open, silent, until the
    client left) and no session to end."""
    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "text/event-stream, application/json"}
    async with httpx.AsyncClient(base_url=served.url, headers=headers, timeout=10) as http:
        for method in ("GET", "DELETE"):
            response = await http.request(method, "/mcp")
            assert response.status_code == 405 and response.headers["allow"] == "POST"


def test_tool_arguments_json_cannot_represent_are_tool_errors(served: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json, text/event-stream"}
    headers["Content-Type"] = "application/json"
    call = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_documents", "arguments": '
    for arguments, status in [
        (b'{"query": "brake", "top_k": NaN}', 200),
        (b'{"query": "brake", "top_k": 1e309}', 200),
        (b'{"query": "brake", "metadata": {"a": Infinity}}', 200),
        (b'{"query": "\\ud800"}', 400),  # a JSON-RPC parse error
    ]:
        response = httpx.post(f"{served.url}/mcp", content=call + arguments + b"}}", headers=headers, timeout=30)
        assert response.status_code == status, arguments
        answer = response.json()
        assert answer.get("result", {}).get("isError") or answer["error"]["code"] == -32700, arguments


async def test_stdio_via_carrag_mcp(tmp_path: Path, embedding_backend) -> None:
    container = await open_container(make_settings(tmp_path, tagger="off"), embedding_backend)
    try:
        await ingest(container)
    finally:
        await close_container(container)
    env = clean_environment()
    env.update(
        {
            "DATA_DIR": str(tmp_path),
            "LOG_LEVEL": "WARNING",
            "RERANK_ENABLED": "false",
            "DEFAULT_TOP_K": "1",
        }
    )
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "carrag.cli.main", "mcp"], env=env, cwd=str(tmp_path)
    )
    async with Client(server, read_timeout_seconds=120) as client:
        await check_tools(client)
        default = text_of(await client.call_tool("search_documents", {"query": "oil change and tire pressure"}))
        assert default.count("[Source: ") == 1, "no top_k: DEFAULT_TOP_K"

"""The MCP server (official ``mcp`` SDK, v2 ``MCPServer``): the agent tools over MCP.

Tools: ``search_documents(query, top_k=5, source=None, collections=None)``, ``list_sources(collection=None)``
and ``list_collections()``, all answered by
`carrag.services.agent_tools` (the `/search` code path). Two transports:

- streamable HTTP, mounted in the API at ``/mcp`` (stateless, JSON responses; behind API_KEYS like
  every other route) — see `McpEndpoint` and `carrag.api.main`;
- stdio, ``carrag mcp``: a process of its own that opens the store and embedder from the settings.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import SecretStr
from starlette.types import Receive, Scope, Send

from carrag import __version__
from carrag.api.middleware import bearer_key_valid, send_unauthorized
from carrag.services import agent_tools
from carrag.services.container import Container
from carrag.services.errors import CarragError
from carrag.services.settings import Settings

INSTRUCTIONS = (
    "Carrag searches the documents ingested into it (hybrid BM25 + semantic search, reranked). Call "
    "search_documents before answering questions about them and cite the [Source: ...] of what you use; "
    "call list_sources to see which sources exist, list_collections to see the collections (knowledge "
    "bases) search_documents can search (default: the 'default' collection)."
)


def build_mcp_server(container: Callable[[], Container]) -> MCPServer:
    """``container`` is called per tool call, so the server can exist before the container does."""
    with _logging_left_alone():
        server = MCPServer("carrag", instructions=INSTRUCTIONS, version=__version__)

    @server.tool(structured_output=False)
    async def search_documents(
        query: str, top_k: int = 5, source: str | None = None, collections: list[str] | None = None
    ) -> str:
        """Search the ingested documents and return the best passages, best first.

        Each passage starts with a header: [Source: <source id> | Score: <score> | Page: <n>].

        Args:
            query: What to look for, in natural language or keywords.
            top_k: How many passages to return (default 5).
            source: Only search this source: an exact source id (see list_sources) or a glob
                such as "*.md" or "manuals/*".
            collections: The collections (knowledge bases) to search, by name (see list_collections);
                default: the "default" collection.
        """
        try:
            return await agent_tools.search_documents(
                container().search, container().requests, query, top_k, source, collections
            )
        except CarragError as exc:
            raise ToolError(exc.message) from exc

    @server.tool(structured_output=False)
    async def list_sources(collection: str | None = None) -> str:
        """List the ingested sources (source id and type), the values search_documents can filter on.

        Args:
            collection: The collection whose sources to list (default: the "default" collection).
        """
        try:
            return await agent_tools.list_sources(container().documents, collection)
        except CarragError as exc:
            raise ToolError(exc.message) from exc

    @server.tool(structured_output=False)
    async def list_collections() -> str:
        """List the collections (knowledge bases) with their document counts."""
        try:
            return await agent_tools.list_collections(container().collections)
        except CarragError as exc:
            raise ToolError(exc.message) from exc

    return server


@contextlib.contextmanager
def _logging_left_alone() -> Iterator[None]:
    """MCPServer() calls logging.basicConfig (a Rich handler on the root logger); logging is
    configured by `carrag.api.log_config`, so undo that."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def http_session_manager(server: MCPServer, settings: Settings) -> StreamableHTTPSessionManager:
    """Prepare the streamable HTTP transport; the app's lifespan must run ``manager.run()``.

    Stateless with JSON responses: every request stands alone, so nothing is kept between tool calls
    and any number of clients can share the endpoint. The SDK's DNS-rebinding protection is on when
    the service binds to loopback (HOST), off otherwise (API_KEYS then guard the endpoint).
    """
    server.streamable_http_app(stateless_http=True, json_response=True, host=settings.host)
    return server.session_manager


class McpEndpoint:
    """The ASGI endpoint mounted at ``/mcp``: checks the API key, then hands over to the SDK."""

    def __init__(self, manager: StreamableHTTPSessionManager, api_keys: Callable[[], list[SecretStr]]) -> None:
        self.manager = manager
        self.api_keys = api_keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keys = self.api_keys()
        if keys and not bearer_key_valid(scope, keys):
            await send_unauthorized(send)
            return
        await self.manager.handle_request(scope, receive, send)


async def run_stdio(settings: Settings) -> None:
    """``carrag mcp``: serve the tools over stdin/stdout until the client closes them.

    Only search is needed here, so no LLM is loaded. Logs go to stderr (stdout is the protocol).
    """
    from carrag.services.container import build_container
    from carrag.services.llms.extractive import ExtractiveLLM

    container = await build_container(settings, llm=ExtractiveLLM("not needed by the MCP server"))
    try:
        await build_mcp_server(lambda: container).run_stdio_async()
    finally:
        await container.aclose()

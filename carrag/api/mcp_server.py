"""The MCP server (``mcp`` SDK v2): ``search_documents``, ``list_sources`` and ``list_collections``,
answered by `carrag.services.agent_tools`, over streamable HTTP at ``/mcp`` (stateless, behind API_KEYS)
or over stdio (``carrag mcp``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from carrag import __version__
from carrag.api.deps import authenticate
from carrag.api.middleware import send_unauthorized
from carrag.services import agent_tools
from carrag.services.access import FULL_ACCESS, Principal
from carrag.services.container import Container
from carrag.services.errors import CarragError
from carrag.services.requests import MetadataFilters
from carrag.services.settings import Settings

PRINCIPAL_STATE = "carrag_principal"
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
        query: str,
        ctx: Context,
        top_k: int | None = None,
        source: str | None = None,
        collections: list[str] | None = None,
        tags: list[str] | None = None,
        tag_prefix: list[str] | None = None,
        metadata: dict[str, str | int | float | bool] | None = None,
        source_type: list[str] | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        filename: str | None = None,
    ) -> str:
        """Search the ingested documents and return the best passages, best first.

        Each passage starts with a header: [Source: <source id> | Score: <score> | Page: <n>].
        Every filter given must hold.

        Args:
            query: What to look for, in natural language or keywords.
            top_k: How many passages to return (default: the server's DEFAULT_TOP_K).
            source: Only search this source: an exact source id (see list_sources) or a glob
                such as "*.md" or "manuals/*".
            collections: The collections (knowledge bases) to search, by name (see list_collections);
                default: the "default" collection.
            tags: Only documents with any of these tags.
            tag_prefix: Only documents with a tag starting with any of these ("team-").
            metadata: Only documents whose metadata has every one of these key/value pairs.
            source_type: Only documents of any of these types ("pdf", "text"; see list_sources).
            created_after: Only documents created at or after this ISO 8601 date or time.
            created_before: Only documents created before this ISO 8601 date or time.
            filename: Only documents whose file name matches this glob ("*.pdf").
        """
        filters = MetadataFilters(tag_prefix, metadata, source_type, created_after, created_before, filename)
        try:
            return await agent_tools.search_documents(
                container().search,
                container().requests,
                query,
                top_k,
                source,
                collections,
                tags=tags,
                filters=filters,
                principal=principal_of(ctx),
            )
        except CarragError as exc:
            raise ToolError(exc.message) from exc

    @server.tool(structured_output=False)
    async def list_sources(ctx: Context, collection: str | None = None) -> str:
        """List the ingested sources (source id and type), the values search_documents can filter on.

        Args:
            collection: The collection whose sources to list (default: the "default" collection).
        """
        try:
            return await agent_tools.list_sources(container().documents, collection, principal_of(ctx))
        except CarragError as exc:
            raise ToolError(exc.message) from exc

    @server.tool(structured_output=False)
    async def list_collections(ctx: Context) -> str:
        """List the collections (knowledge bases) with their document counts."""
        try:
            return await agent_tools.list_collections(container().collections, principal_of(ctx))
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
    """The ASGI endpoint mounted at ``/mcp``: checks the API key, then hands over to the SDK. The key's
    `Principal` (API_KEY_SCOPES) goes into the request state, where the tools read it."""

    def __init__(self, manager: StreamableHTTPSessionManager, settings: Callable[[], Settings]) -> None:
        self.manager = manager
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = authenticate(self.settings(), Headers(scope=scope))
        if principal is None:
            await send_unauthorized(send)
            return
        state = scope.setdefault("state", {})
        state[PRINCIPAL_STATE], state["key_id"] = principal, principal.key_id
        await self.manager.handle_request(scope, receive, send)


def principal_of(context: Context) -> Principal:
    """The principal of the HTTP request behind a tool call; stdio (``carrag mcp``, a local process
    run with the operator's settings) has full access."""
    try:
        request = context.request_context.request
    except ValueError:  # no request: stdio
        return FULL_ACCESS
    scope = getattr(request, "scope", None) or {}
    return scope.get("state", {}).get(PRINCIPAL_STATE, FULL_ACCESS)


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

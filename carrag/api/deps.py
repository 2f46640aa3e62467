"""FastAPI dependencies, as ``Annotated`` aliases the routes declare (full-stack-fastapi-template style)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPBearer
from starlette.datastructures import Headers

from carrag.services.access import KeyRing, Principal
from carrag.services.answering import AnswerService
from carrag.services.collections import CollectionService
from carrag.services.container import Container
from carrag.services.documents import DocumentService
from carrag.services.ingestion import IngestionService
from carrag.services.jobs import JobManager
from carrag.services.page_images import PageImageService
from carrag.services.requests import RequestFactory
from carrag.services.retrieval.search import SearchService
from carrag.services.settings import Settings


# Every dependency is a coroutine function, even the ones that only read an attribute: FastAPI runs a
# plain ``def`` dependency in its thread pool, a hop to a worker thread and back per request.
async def get_container(request: Request) -> Container:
    return request.app.state.container


ContainerDep = Annotated[Container, Depends(get_container)]


def _part(name: str) -> Callable[[Container], Awaitable[Any]]:
    """A dependency answering the container's part ``name`` (``container.documents``, ...)."""

    async def part(container: ContainerDep) -> Any:
        return getattr(container, name)

    return part


SettingsDep = Annotated[Settings, Depends(_part("settings"))]
DocumentsDep = Annotated[DocumentService, Depends(_part("documents"))]
IngestionDep = Annotated[IngestionService, Depends(_part("ingestion"))]
PageImagesDep = Annotated[PageImageService, Depends(_part("page_images"))]
SearchDep = Annotated[SearchService, Depends(_part("search"))]
AnswersDep = Annotated[AnswerService, Depends(_part("answers"))]
RequestsDep = Annotated[RequestFactory, Depends(_part("requests"))]
CollectionsDep = Annotated[CollectionService, Depends(_part("collections"))]
JobsDep = Annotated[JobManager, Depends(_part("jobs"))]


class Unauthorized(Exception):
    pass


UNAUTHORIZED_DETAIL = "Missing or invalid API key: send Authorization: Bearer <key>."


def authenticate(settings: Settings, headers: Headers) -> Principal | None:
    """Who a request acts as, from its ``Authorization: Bearer <key>`` header (API_KEYS,
    API_KEY_SCOPES); None: refused (401). Without API_KEYS, full access. The one reading of the
    header: the routes (`require_api_key`), the gate before a body is read and /mcp all call it.
    The scheme is matched in any case, the key is what follows one space, trimmed."""
    scheme, _, key = (headers.get("authorization") or "").partition(" ")
    return KeyRing(settings.api_keys, settings.api_key_scopes).authenticate(
        key.strip() if scheme.lower() == "bearer" else ""
    )


class ApiKeyAuth(HTTPBearer):
    """The routes' key check, a dependency of every protected router (`carrag.api.main`): the
    request's `Principal`, or 401. It is FastAPI's bearer scheme (so /openapi.json documents it) with
    the header read by `authenticate`; it has no dependencies of its own to solve."""

    async def __call__(self, request: Request) -> Principal:  # type: ignore[override]
        principal = authenticate(request.app.state.container.settings, request.headers)
        if principal is None:
            raise Unauthorized()
        request.state.key_id = principal.key_id  # for the access log (which key a client uses, e.g. while rotating)
        return principal


require_api_key = ApiKeyAuth(
    scheme_name="HTTPBearer", description="One of the keys in API_KEYS (only when API_KEYS is set)."
)

# FastAPI caches a dependency per request: the routers' own Depends(require_api_key) and this are one call.
PrincipalDep = Annotated[Principal, Depends(require_api_key)]

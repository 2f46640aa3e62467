"""FastAPI dependencies, as ``Annotated`` aliases the routes declare (full-stack-fastapi-template style)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer
from starlette.datastructures import Headers

from carrag.services.access import KeyRing, Principal
from carrag.services.answering import AnswerService
from carrag.services.collections import CollectionService
from carrag.services.container import Container
from carrag.services.documents import DocumentService
from carrag.services.ingestion import IngestionService
from carrag.services.page_images import PageImageService
from carrag.services.requests import RequestFactory
from carrag.services.retrieval.search import SearchService
from carrag.services.settings import Settings


# Every dependency is a coroutine function, even the ones that only read an attribute: FastAPI runs a
# plain ``def`` dependency in its thread pool, one hop to a worker thread and back per dependency
# per request (scripts/api_overhead.py: ~0.15 ms of wall and CPU each on a quiet 2-core machine,
# more when the cores are busy).
async def get_container(request: Request) -> Container:
    return request.app.state.container


ContainerDep = Annotated[Container, Depends(get_container)]


async def get_settings(container: ContainerDep) -> Settings:
    return container.settings


async def get_documents(container: ContainerDep) -> DocumentService:
    return container.documents


async def get_page_images(container: ContainerDep) -> PageImageService:
    return container.page_images


async def get_ingestion(container: ContainerDep) -> IngestionService:
    return container.ingestion


async def get_search(container: ContainerDep) -> SearchService:
    return container.search


async def get_answers(container: ContainerDep) -> AnswerService:
    return container.answers


async def get_requests(container: ContainerDep) -> RequestFactory:
    return container.requests


async def get_collections(container: ContainerDep) -> CollectionService:
    return container.collections


SettingsDep = Annotated[Settings, Depends(get_settings)]
DocumentsDep = Annotated[DocumentService, Depends(get_documents)]
IngestionDep = Annotated[IngestionService, Depends(get_ingestion)]
PageImagesDep = Annotated[PageImageService, Depends(get_page_images)]
SearchDep = Annotated[SearchService, Depends(get_search)]
AnswersDep = Annotated[AnswerService, Depends(get_answers)]
RequestsDep = Annotated[RequestFactory, Depends(get_requests)]
CollectionsDep = Annotated[CollectionService, Depends(get_collections)]


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

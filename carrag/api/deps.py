"""FastAPI dependencies, as ``Annotated`` aliases the routes declare (full-stack-fastapi-template style)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import SecretStr

from carrag.services.access import FULL_ACCESS, KeyRing, Principal
from carrag.services.answering import AnswerService
from carrag.services.collections import CollectionService
from carrag.services.container import Container
from carrag.services.documents import DocumentService
from carrag.services.ingestion import IngestionService
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
SearchDep = Annotated[SearchService, Depends(get_search)]
AnswersDep = Annotated[AnswerService, Depends(get_answers)]
RequestsDep = Annotated[RequestFactory, Depends(get_requests)]
CollectionsDep = Annotated[CollectionService, Depends(get_collections)]

_bearer = HTTPBearer(auto_error=False, description="One of the keys in API_KEYS (only when API_KEYS is set).")


class Unauthorized(Exception):
    pass


UNAUTHORIZED_DETAIL = "Missing or invalid API key: send Authorization: Bearer <key>."


def api_key_matches(presented: str, keys: Sequence[SecretStr]) -> bool:
    """Constant-time: every key is compared in full (no early exit), so timing reveals neither
    which key nor how much of a prefix matched."""
    return KeyRing(keys).authenticate(presented) is not None if keys else False


def principal_for(settings: Settings, authorization: str | None) -> Principal | None:
    """Who an ``Authorization: Bearer <key>`` header (or its absence) acts as; None: refused (401)."""
    keys = KeyRing.from_settings(settings)
    if keys.open:
        return FULL_ACCESS
    scheme, _, presented = (authorization or "").partition(" ")
    return keys.authenticate(presented.strip()) if scheme.lower() == "bearer" else None


async def require_api_key(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """When API_KEYS is set, every route but /health needs ``Authorization: Bearer <key>``. Answers
    the `Principal` the key acts as (API_KEY_SCOPES); without API_KEYS, full access."""
    return _authenticated(request, credentials.credentials if credentials else "")


async def request_principal(request: Request) -> Principal:
    """`require_api_key` for ``POST /search``, which declares it alone: it reads the header with the
    parser ``HTTPBearer(auto_error=False)`` uses (the bearer credentials of a ``Bearer <key>`` header,
    else none) instead of depending on it, one dependency for FastAPI to solve per request instead of
    five (carrag/api/routes/search.py). The documented ``/search`` still declares the scheme."""
    scheme, presented = get_authorization_scheme_param(request.headers.get("authorization"))
    return _authenticated(request, presented if scheme.lower() == "bearer" else "")


def _authenticated(request: Request, presented: str) -> Principal:
    keys = KeyRing.from_settings(request.app.state.container.settings)
    principal = keys.authenticate(presented)
    if principal is None:
        raise Unauthorized()
    request.state.key_id = principal.key_id  # for the access log (which key a client uses, e.g. while rotating)
    return principal


# FastAPI caches a dependency per request: the routers' own Depends(require_api_key) and this are one call.
PrincipalDep = Annotated[Principal, Depends(require_api_key)]

"""FastAPI dependencies, as ``Annotated`` aliases the routes declare (full-stack-fastapi-template style)."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr

from carrag.services.answering import AnswerService
from carrag.services.collections import CollectionService
from carrag.services.container import Container
from carrag.services.documents import DocumentService
from carrag.services.ingestion import IngestionService
from carrag.services.requests import RequestFactory
from carrag.services.retrieval.search import SearchService
from carrag.services.settings import Settings


def get_container(request: Request) -> Container:
    return request.app.state.container


ContainerDep = Annotated[Container, Depends(get_container)]


def get_settings(container: ContainerDep) -> Settings:
    return container.settings


def get_documents(container: ContainerDep) -> DocumentService:
    return container.documents


def get_ingestion(container: ContainerDep) -> IngestionService:
    return container.ingestion


def get_search(container: ContainerDep) -> SearchService:
    return container.search


def get_answers(container: ContainerDep) -> AnswerService:
    return container.answers


def get_requests(container: ContainerDep) -> RequestFactory:
    return container.requests


def get_collections(container: ContainerDep) -> CollectionService:
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
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(presented.encode(), key.get_secret_value().encode())
    return matched


async def require_api_key(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """When API_KEYS is set, every route but /health needs ``Authorization: Bearer <key>``."""
    keys: list[SecretStr] = request.app.state.container.settings.api_keys
    if not keys:
        return
    if not api_key_matches(credentials.credentials if credentials else "", keys):
        raise Unauthorized()

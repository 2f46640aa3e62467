"""The one reading of ``Authorization: Bearer <key>`` (`carrag.api.deps.authenticate`), which the routes'
`require_api_key`, the gate that refuses a body before it is read and /mcp all call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.datastructures import Headers

from carrag.api import deps
from carrag.api.main import create_app
from carrag.services.access import FULL_ACCESS, key_id
from tests.conftest import close_container, make_settings, open_container

GOOD = "good-key-0123456789"
SCOPED = "scoped-key-0123456789"
SCOPES = f'{{"{SCOPED}": {{"collections": ["team-a"], "read_only": true}}}}'

# header → the key it presents (None: refused)
HEADERS: dict[str | None, str | None] = {
    None: None,
    "": None,
    "Bearer": None,
    "Bearer ": None,
    "Bearer  ": None,
    f"Bearer {GOOD}": GOOD,
    f"bearer {GOOD}": GOOD,
    f"BEARER   {GOOD}  ": GOOD,
    f"Bearer\t{GOOD}": None,
    f"Basic {GOOD}": None,
    f"Bearer {GOOD} extra": None,
    f"Bearer {SCOPED}": SCOPED,
    "Bearer wrong-key": None,
    f" Bearer {GOOD}": None,
    GOOD: None,
}


def headers(header: str | None) -> Headers:
    return Headers(raw=[] if header is None else [(b"authorization", header.encode())])


@pytest.mark.parametrize("header", HEADERS)
def test_a_key_is_accepted_only_as_bearer_credentials(tmp_path, header: str | None) -> None:
    settings = make_settings(tmp_path, api_keys=f"{GOOD},{SCOPED}", api_key_scopes=SCOPES)

    principal = deps.authenticate(settings, headers(header))

    expected = HEADERS[header]
    if expected is None:
        assert principal is None
    else:
        assert principal is not None and principal.key_id == key_id(expected)
        assert principal.read_only == (expected == SCOPED)


@pytest.mark.parametrize("header", HEADERS)
def test_without_api_keys_every_header_has_full_access(tmp_path, header: str | None) -> None:
    assert deps.authenticate(make_settings(tmp_path), headers(header)) is FULL_ACCESS


@pytest.fixture
async def keyed_app(tmp_path, embedding_backend) -> AsyncIterator[FastAPI]:
    settings = make_settings(tmp_path, api_keys=f"{GOOD},{SCOPED}", api_key_scopes=SCOPES)
    container = await open_container(settings, embedding_backend)
    yield create_app(container=container)
    await close_container(container)


async def test_routes_and_the_body_gate_agree_with_it(keyed_app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=keyed_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://carrag.test") as client:
        for header, key in HEADERS.items():
            sent = {} if header is None else {"Authorization": header}
            listing = await client.get("/documents", headers=sent)  # the route's check alone
            search = await client.post("/search", json={"question": "brake"}, headers=sent)  # the gate, then it
            refused = key is None
            assert (listing.status_code == 401) == refused, header
            assert (search.status_code == 401) == refused, header
            if key == SCOPED:
                assert search.status_code == 403  # the scoped key's principal: it may not read `default`

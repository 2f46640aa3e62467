"""What the app costs per request around the services (docs/benchmarks.md, "What the HTTP app adds
around the search service"; scripts/api_overhead.py).

FastAPI runs a plain ``def`` dependency (or endpoint) in its thread pool: a hop to a worker thread and
back, per dependency, per request. That was most of the time ``POST /search`` spent outside the search
service, and much more of it on a busy machine, so every dependency and endpoint is a coroutine
function. And FastAPI finds a route of an included router by scanning the routers included before
it, so ``POST /search`` is matched first (its documented place in the schema is unchanged).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Annotated, Any, get_args, get_origin

import httpx
import pytest
from fastapi import params
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.routing import Match

import carrag.api.routes
from carrag.api import deps
from carrag.api.main import create_app
from carrag.api.routes import search
from tests.conftest import make_settings


def runs_on_the_loop(call: Callable[..., Any]) -> bool:
    """Whether FastAPI awaits ``call`` (a coroutine function, or an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(getattr(call, "__call__", None))  # noqa: B004


def dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for sub in dependant.dependencies:
        yield sub
        yield from dependencies(sub)


def api_routes() -> Iterator[APIRoute]:
    for module_info in pkgutil.iter_modules(carrag.api.routes.__path__):
        module = importlib.import_module(f"carrag.api.routes.{module_info.name}")
        router = getattr(module, "router", None)
        for route in getattr(router, "routes", []):
            if isinstance(route, APIRoute):
                yield route


def test_every_dependency_alias_is_a_coroutine_function() -> None:
    aliases = {name: value for name, value in vars(deps).items() if get_origin(value) is Annotated}
    assert "SearchDep" in aliases and "ContainerDep" in aliases
    for name, alias in aliases.items():
        for marker in get_args(alias)[1:]:
            if isinstance(marker, params.Depends):
                assert marker.dependency is not None and runs_on_the_loop(marker.dependency), name
    assert runs_on_the_loop(deps.require_api_key)  # the routers' own dependency (carrag/api/main.py)


def test_no_route_runs_an_endpoint_or_dependency_in_the_thread_pool() -> None:
    routes = list(api_routes())
    assert any(route.path == "/search" for route in routes)
    for route in routes:
        assert runs_on_the_loop(route.endpoint), route.path
        for sub in dependencies(route.dependant):
            assert sub.call is None or runs_on_the_loop(sub.call), (route.path, sub.call)


async def test_search_request_never_waits_for_a_worker_thread(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fastapi.dependencies.utils
    import fastapi.routing

    hops: list[str] = []

    def counted(module: Any) -> None:
        original = module.run_in_threadpool

        async def run_in_threadpool(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            hops.append(getattr(func, "__qualname__", repr(func)))
            return await original(func, *args, **kwargs)

        monkeypatch.setattr(module, "run_in_threadpool", run_in_threadpool)

    counted(fastapi.dependencies.utils)
    counted(fastapi.routing)

    response = await client.post("/search", json={"question": "brake fluid", "top_k": 3})

    assert response.status_code == 200
    assert hops == []


def test_search_is_matched_before_any_other_router_is_scanned(tmp_path) -> None:
    app = create_app(make_settings(tmp_path))
    scope = {"type": "http", "method": "POST", "path": "/search", "root_path": "", "headers": [], "app": app}
    scanned = []
    for route in app.router.routes:
        if route.matches(dict(scope))[0] == Match.FULL:
            break
        scanned.append(route)
    assert getattr(route, "original_router", None) is search.router
    assert [r for r in scanned if hasattr(r, "original_router")] == [], "no included router is scanned first"

    paths = list(app.openapi()["paths"])  # documented once, in its place after /query
    assert paths.count("/search") == 1 and paths.index("/search") > paths.index("/query")


async def test_search_solves_one_dependency_of_its_own(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``POST /search`` declares only `request_principal`, which has no dependencies: FastAPI solves two
    dependants per request (the route and it) instead of six with the routers' `require_api_key` (and
    its HTTPBearer) and the endpoint's container and principal dependencies."""
    import fastapi.dependencies.utils
    import fastapi.routing

    solved: list[Any] = []
    original = fastapi.dependencies.utils.solve_dependencies

    async def solve_dependencies(**kwargs: Any) -> Any:
        solved.append(kwargs["dependant"].call)
        return await original(**kwargs)

    monkeypatch.setattr(fastapi.dependencies.utils, "solve_dependencies", solve_dependencies)
    monkeypatch.setattr(fastapi.routing, "solve_dependencies", solve_dependencies)

    response = await client.post("/search", json={"question": "brake fluid", "top_k": 3})

    assert response.status_code == 200
    assert solved == [search.search, deps.request_principal]


HEADERS = [
    None,
    "",
    "Bearer",
    "Bearer ",
    "Bearer  ",
    "Bearer good-key-0123456789",
    "bearer good-key-0123456789",
    "BEARER   good-key-0123456789  ",
    "Bearer\tgood-key-0123456789",
    "Basic good-key-0123456789",
    "Bearer good-key-0123456789 extra",
    "Bearer scoped-key-0123456789",
    "Bearer wrong-key",
    " Bearer good-key-0123456789",
    "good-key-0123456789",
]


@pytest.mark.parametrize("keys", [[], ["good-key-0123456789", "scoped-key-0123456789"]])
@pytest.mark.parametrize("header", HEADERS)
async def test_request_principal_reads_the_header_as_require_api_key_does(
    tmp_path, keys: list[str], header: str | None
) -> None:
    from starlette.requests import Request

    scopes = '{"scoped-key-0123456789": {"collections": ["team-a"], "read_only": true}}' if keys else "{}"
    settings = make_settings(tmp_path, api_keys=",".join(keys), api_key_scopes=scopes)
    app = SimpleNamespace(state=SimpleNamespace(container=SimpleNamespace(settings=settings)))

    def request() -> Request:
        headers = [] if header is None else [(b"authorization", header.encode())]
        return Request({"type": "http", "method": "POST", "path": "/search", "headers": headers, "app": app})

    async def outcome(check: Callable[[Request], Any]) -> tuple[Any, Any]:
        checked = request()
        try:
            principal = await check(checked)
        except deps.Unauthorized:
            return "401", None
        return principal, checked.state.key_id

    async def through_bearer(checked: Request) -> Any:
        return await deps.require_api_key(checked, await deps._bearer(checked))

    assert await outcome(deps.request_principal) == await outcome(through_bearer)


def test_every_route_of_the_search_router_checks_the_key_itself() -> None:
    """main.py includes `search.router` first without the routers' `require_api_key`: a route added
    there must declare `request_principal` (or it would answer without a key)."""
    for route in search.router.routes:
        assert isinstance(route, APIRoute)
        assert deps.request_principal in [sub.call for sub in route.dependant.dependencies], route.path

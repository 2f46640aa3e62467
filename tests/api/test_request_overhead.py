"""What the app costs per request around the services (docs/benchmarks.md, "What the HTTP app adds
around the search service"; scripts/api_overhead.py).

FastAPI runs a plain ``def`` dependency (or endpoint) in its thread pool: a hop to a worker thread and
back, per dependency, per request. That was most of the time ``POST /search`` spent outside the search
service, and much more of it on a busy machine, so every dependency and endpoint is a coroutine
function.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Annotated, Any, get_args, get_origin

import httpx
import pytest
from fastapi import params
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

import carrag.api.routes
from carrag.api import deps


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

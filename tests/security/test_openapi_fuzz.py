"""OpenAPI fuzzing with schemathesis: generated requests for every operation in the schema, valid and
invalid, must never get a 5xx.

The app starts as in production (its lifespan builds the container from settings) with two test
seams: the URL fetcher answers every request itself with a small text page (so fuzzed URLs cause no
DNS lookup and no traffic; only loopback is ever touched), and logging is left to pytest. LLM=none
keeps /query fast; the real local embedder, SQLite store and ingestion pipeline run.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi as schemathesis_asgi

import carrag.api.main
from carrag.services.container import build_container
from carrag.services.fetchers.http import HttpFetcher
from tests.conftest import make_settings

EXAMPLES_PER_OPERATION = 30


async def answer_everything_offline(host: str, port: int) -> list[str]:
    return ["93.184.215.14"]  # a public address: never contacted, the transport below answers


def offline_page(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200,
        text=f"A fuzzed page at {request.url.path}: the tire pressure is 35 psi.",
        headers={"Content-Type": "text/plain"},
    )


@pytest.fixture(scope="module")
def fuzzed_app(tmp_path_factory) -> Iterator[object]:
    settings_ = make_settings(tmp_path_factory.mktemp("fuzz"), llm="none", tagger="keywords", log_level="WARNING")
    fetcher = HttpFetcher(
        resolver=answer_everything_offline, transport=httpx.MockTransport(offline_page), per_host_delay=0
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(carrag.api.main, "build_container", functools.partial(build_container, fetcher=fetcher))
        patch.setattr(carrag.api.main, "configure_logging", lambda *args, **kwargs: None)
        app = carrag.api.main.create_app(settings_)
        yield app
        schemathesis_asgi.shutdown_lifespans()  # runs the app's shutdown (closes the container)


@pytest.mark.slow
def test_no_operation_answers_5xx(fuzzed_app) -> None:
    """Every operation, EXAMPLES_PER_OPERATION generated requests per mode (schema-valid, then
    schema-violating), checked with schemathesis' ``not_a_server_error``. One test for both modes:
    the schemathesis pytest plugin stops the app's lifespan when a test ends."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed_app)
    failures: dict[str, str] = {}
    tested: set[str] = set()
    sent: dict[str, int] = {}
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for result in schema.get_all_operations():
            operation = result.ok()
            tested.add(operation.label)

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                derandomize=True,  # the same examples every run: a failure here is reproducible
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def no_server_error(case) -> None:
                sent[mode.value] = sent.get(mode.value, 0) + 1
                case.call_and_validate(checks=[not_a_server_error])

            try:
                no_server_error()
            except Unsatisfiable:
                continue  # nothing schema-violating can be generated for this operation (no inputs)
            except Exception as exc:  # noqa: BLE001 - collect every operation's failure, then report all
                failures[f"{mode.value} {operation.label}"] = str(exc)[:2000]
    assert {"POST /ingest/file", "POST /search", "POST /query/stream"} <= tested
    assert failures == {}
    assert sent["positive"] >= 5 * len(tested) and sent["negative"] >= 5 * len(tested), sent

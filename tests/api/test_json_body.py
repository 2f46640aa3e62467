"""What JSON cannot represent is refused with a 422 everywhere a request carries JSON, and a 422 can
always be sent (issue 25 rows 9 and 10: these were 500s, then a dropped connection)."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.routing import APIRoute

from carrag.api.json_body import JsonBodyRoute, strict_json
from carrag.api.main import create_app
from tests.conftest import make_settings

UNREPRESENTABLE = {
    "NaN": b"NaN",
    "Infinity": b"Infinity",
    "-Infinity": b"-Infinity",
    "overflow": b"1e309",
    "negative overflow": b"-1e309",
    "lone surrogate": b'"\\ud800"',
    "lone low surrogate": b'"x\\uDFFFy"',
}


def refuse_non_json(name: str) -> None:
    raise AssertionError(f"the answer holds {name}")


def parses_as_json(response: httpx.Response) -> object:
    """The answer's body is JSON JSON can represent."""
    return json.loads(response.content.decode("utf-8"), parse_constant=refuse_non_json)


@pytest.mark.parametrize("value", UNREPRESENTABLE.values(), ids=UNREPRESENTABLE.keys())
def test_strict_json_refuses_what_json_cannot_represent(value: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        strict_json(b'{"a": [1, ' + value + b"]}")


def test_strict_json_refuses_a_surrogate_as_a_key_and_bytes_that_are_not_utf8() -> None:
    for body in (b'{"\\ud800": 1}', b'"\xed\xa0\x80"', b'"\xff"', b'{"a": 1e99999}'):
        with pytest.raises(json.JSONDecodeError):
            strict_json(body)


def test_strict_json_reads_what_json_can() -> None:
    body = '{"emoji": "\\ud83d\\ude00 é", "big": 123456789012345678901234567890, "small": 1e-320, "x": [true, null]}'
    assert strict_json(body.encode()) == {
        "emoji": "😀 é",
        "big": 123456789012345678901234567890,
        "small": 1e-320,
        "x": [True, None],
    }
    assert strict_json(b'"\\\\ud800"') == "\\ud800"  # an escaped backslash: the text "\ud800", not a surrogate


def test_every_route_decodes_its_body_strictly(tmp_path) -> None:
    app = create_app(make_settings(tmp_path))
    routes = [
        context.original_route
        for included in app.routes
        for context in getattr(included, "effective_route_contexts", list)()  # FastAPI's included routers
    ]
    assert len([route for route in routes if isinstance(route, APIRoute)]) > 20
    assert [route.path for route in routes if not isinstance(route, JsonBodyRoute)] == []


QUESTION = b'"question": "brake fluid"'
BODIES: dict[tuple[str, str], bytes] = {
    ("POST", "/search"): b"{" + QUESTION + b', "top_k": @}',
    ("POST", "/query"): b"{" + QUESTION + b', "min_relevance": @}',
    ("POST", "/query/stream"): b'{"question": @}',
    ("POST", "/v1/chat/completions"): b'{"model": "carrag", "messages": [{"role": "user", "content": "x"}], '
    b'"temperature": @}',
    ("POST", "/ingest/url"): b'{"url": "https://example.com", "metadata": {"a": @}}',
    ("PATCH", "/documents/0123"): b'{"metadata": {"a": @}}',
    ("POST", "/collections"): b'{"name": @}',
    ("PATCH", "/collections/default"): b'{"description": @}',
    ("POST", "/admin/reset"): b'{"confirm": @}',
}


@pytest.mark.parametrize("value", UNREPRESENTABLE.values(), ids=UNREPRESENTABLE.keys())
async def test_every_json_entry_point_answers_422(client: httpx.AsyncClient, value: bytes) -> None:
    for (method, path), template in BODIES.items():
        response = await client.request(
            method, path, content=template.replace(b"@", value), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 422, (method, path, response.text)
        detail = parses_as_json(response)["detail"]  # type: ignore[index]
        assert "JSON numbers must be finite" in str(detail) or "lone surrogate" in str(detail), detail


@pytest.mark.parametrize("metadata", ['{"a": NaN}', '{"a": 1e309}', '{"a": -Infinity}'])
async def test_an_upload_s_metadata_field_with_a_non_finite_number_is_a_422(
    client: httpx.AsyncClient, metadata: str
) -> None:
    response = await client.post("/ingest/file", files={"file": ("a.txt", b"brake fluid")}, data={"metadata": metadata})
    assert response.status_code == 422
    assert "must be a finite number" in str(parses_as_json(response))


async def test_form_fields_and_query_parameters_in_any_bytes_are_not_a_500(client: httpx.AsyncClient) -> None:
    upload = await client.post(
        "/ingest/file",
        files={"file": ("a.txt", b"brake fluid every two years")},
        data={"tags": b"\xed\xa0\x80,x", "source_id": b"\xff"},  # a UTF-8-encoded surrogate: not UTF-8
    )
    assert upload.status_code == 200, upload.text
    assert parses_as_json(upload)["source_id"] == "ÿ"  # type: ignore[index]  # read as Latin-1
    listing = await client.get("/documents?filename=%ED%A0%80&tag=%FF")
    assert listing.status_code == 200
    assert (await client.get("/documents?limit=NaN")).status_code == 422
    assert (await client.get("/documents?offset=1e309")).status_code == 422

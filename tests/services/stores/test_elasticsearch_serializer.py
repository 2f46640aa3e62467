"""The Elasticsearch client's JSON goes through orjson (`connection.py`, OrjsonFirstSerializer): the same
bodies and the same decoded responses as the standard library's serializer, only cheaper; what
orjson refuses to encode goes to the standard library as before. No node needed."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import numpy as np
import pytest
from elasticsearch import AsyncElasticsearch
from elasticsearch.serializer import JsonSerializer, NdjsonSerializer

from carrag.services.stores.elasticsearch.connection import (
    Connection,
    OrjsonFirstNdjsonSerializer,
    OrjsonFirstSerializer,
    client_options,
)

JSON_TYPES = ("application/json", "application/vnd.elasticsearch+json")
NDJSON_TYPES = ("application/x-ndjson", "application/vnd.elasticsearch+x-ndjson")


@pytest.mark.parametrize("client", ["store", "bench raw"])
def test_the_store_client_and_the_bench_raw_client_encode_and_decode_with_orjson(client: str) -> None:
    made = (
        Connection("http://127.0.0.1:9200").client
        if client == "store"
        else AsyncElasticsearch("http://127.0.0.1:9200", **client_options())  # carrag/bench/es_store.py
    )
    serializers = made.transport.serializers
    for mimetype in JSON_TYPES:  # responses come as the compatibility type: both must be orjson's
        assert type(serializers.get_serializer(mimetype)) is OrjsonFirstSerializer
    for mimetype in NDJSON_TYPES:  # bulk bodies: the store's writes and the raw bench's async_bulk alike
        assert type(serializers.get_serializer(mimetype)) is OrjsonFirstNdjsonSerializer
    assert serializers.get_serializer("application/x-ndjson").mimetype == "application/x-ndjson"


def test_a_knn_request_round_trips_to_the_same_floats() -> None:
    vector = np.random.default_rng(3).normal(size=384).astype(np.float32)
    body = {"knn": {"field": "embedding", "query_vector": vector.tolist(), "k": 15, "filter": []}, "size": 15}
    ours, theirs = OrjsonFirstSerializer().dumps(body), JsonSerializer().dumps(body)
    assert json.loads(ours) == json.loads(theirs) == body
    assert np.array_equal(np.asarray(json.loads(ours)["knn"]["query_vector"], dtype=np.float32), vector)


def test_a_response_decodes_as_the_standard_library_does() -> None:
    response = json.dumps(
        {
            "took": 3,
            "hits": {
                "total": {"value": 2, "relation": "eq"},
                "max_score": 1.2345678901234567,
                "hits": [
                    {"_id": "a", "_score": 1.2345678901234567, "_source": {"text": "Ölwechsel — 5 l ✓", "pages": [1]}},
                    {"_id": "b", "_score": 0.1, "_seq_no": 2**40, "_source": {"text": "", "title": None}},
                ],
            },
        },
        ensure_ascii=False,
    ).encode()
    assert OrjsonFirstSerializer().loads(response) == JsonSerializer().loads(response)
    assert OrjsonFirstSerializer().loads(b"") is None  # an empty body, as the client's own serializer


@pytest.mark.parametrize(
    "body",
    [
        {"source_id": "bad-\udcff-name.txt"},  # a lone surrogate (a file name decoded with surrogateescape)
        {1: "a non-string key"},
        {"big": 2**70},
    ],
)
def test_what_orjson_refuses_is_encoded_by_the_standard_library(body: dict[object, object]) -> None:
    assert OrjsonFirstSerializer().dumps(body) == JsonSerializer().dumps(body)


def test_a_bulk_body_is_the_standard_librarys_in_meaning() -> None:
    vector = np.random.default_rng(5).normal(size=384).astype(np.float32)
    body = [
        {"index": {"_id": "a", "_index": "carrag"}},
        {"content": "Ölwechsel", "embedding": vector.tolist(), "created_at": datetime(2026, 11, 27, 14, 0, tzinfo=UTC)},
        {"delete": {"_id": "b"}},
    ]
    ours, theirs = OrjsonFirstNdjsonSerializer().dumps(body), NdjsonSerializer().dumps(body)
    assert [json.loads(line) for line in ours.splitlines()] == [json.loads(line) for line in theirs.splitlines()]
    assert ours.endswith(b"\n") and len(ours.splitlines()) == 3


def test_what_the_client_turns_into_json_itself_is_turned_the_same_way() -> None:
    """The client's ``default`` (numpy scalars, dates, UUIDs) is still the one used, not replaced."""
    body = {
        "score": np.float32(0.5),
        "count": np.int64(3),
        "at": date(2026, 11, 27),
        "id": uuid.UUID(int=7),
        "price": Decimal("1.5"),  # orjson has no encoding of its own: the client's default gives 1.5
    }
    assert json.loads(OrjsonFirstSerializer().dumps(body)) == json.loads(JsonSerializer().dumps(body))
